#!/bin/sh
# A well-behaved agent beside a hostile one: $CALLS rounds of one model-gateway call
# (GET /v1/models) and one NCBI call through the public URL, by curl, a moment apart.
# Answers with each call's status and the slowest call's seconds.
codes="" slowest=0
for i in $(seq "${CALLS:-20}"); do
  for url in "$OPENAI_BASE_URL/models" "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/esearch.fcgi?db=gene&term=polite$i"; do
    got=$(curl -s -o /dev/null -m 30 -H "Authorization: Bearer $OPENAI_API_KEY" -w '%{http_code} %{time_total}' "$url")
    codes="$codes ${got% *}"
    slowest=$(echo "${got#* } $slowest" | awk '{print ($1 > $2) ? $1 : $2}')
  done
  sleep 0.2
done
echo "Answer: codes=$(echo $codes | tr ' ' '\n' | sort | uniq -c | tr -s ' \n' ' ') slowest=$slowest"
