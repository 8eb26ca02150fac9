#!/bin/sh
# The shell's part of the leftovers agent (leftovers.py): System V objects made with
# util-linux's ipcmk and left behind, the host's listed with ipcs, and what /proc says
# of the first process and of its own cgroup. Answers one line: key=value pairs.
shm=$(ipcmk -M 1048576 2>&1 | tr -dc '0-9')
queue=$(ipcmk -Q 2>&1 | tr -dc '0-9')
sems=$(ipcmk -S 4 2>&1 | tr -dc '0-9')
seen=$(ipcs -m 2>/dev/null | grep -c '^0x')
cmdline=$(tr '\0' ' ' < /proc/1/cmdline)
cgroup=$(tr "\n" ";" < /proc/self/cgroup)
echo "Answer: shm=$shm queue=$queue sems=$sems segments_seen=$seen cgroup=$cgroup cmdline=$cmdline"
