"""What a reader reads: the HTML page (``index.html``), ``report.md``, the figures and
the summary a finished workflow prints."""
