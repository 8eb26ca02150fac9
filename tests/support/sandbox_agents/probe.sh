#!/bin/sh
# A shell agent: curl to NCBI's public URL, then the canary by curl and by nc-less
# /dev/tcp (bash), and a lookup of a foreign name. Prints its answer as JSON.
id=$(sed 's/.*"id": *"\([^"]*\)".*/\1/')
reply=$(curl -sS -m 10 "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/esearch.fcgi?db=gene&term=$id")
curl -sS -m 3 "http://127.0.0.1:$CANARY_PORT/" >/dev/null 2>&1
bash -c "echo x > /dev/tcp/127.0.0.1/$CANARY_PORT" 2>/dev/null
curl -sS -m 3 "https://canary.example.com/" >/dev/null 2>&1
printf '{"answer": %s}\n' "$(printf '%s' "$reply" | python3 -c 'import json,sys; print(json.dumps(json.dumps({"reply": sys.stdin.read()})))')"
