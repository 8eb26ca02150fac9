"""What other tools and machines read: each run in their formats (Every Eval Ever,
Inspect's eval log), the RO-Crate and the provenance of the report."""
