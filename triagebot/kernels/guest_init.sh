#!/bin/sh
# pid 1 of a kernel triagebot boots to run one command (triagebot/kernels/boot.py), under QEMU
# (kind vm: the host's / over virtio-9p) or as User-mode Linux (kind uml: over hostfs), the root
# read-only in both. Started as `/bin/sh THIS EXCHANGE SCRATCH KIND` (the kernel's init= and the
# words after "--" on its command line).
#
# EXCHANGE is a host directory the host filled before the boot: arg.0, arg.1, ... one word of the
# command each (the whole argv, timeout, env -i and prlimit included), and cwd. Nothing is parsed
# or evaluated here: each file becomes one word as it is. The command's stdout, stderr and exit
# status go back to EXCHANGE as files (the host reads them); the console carries @@TRIAGE markers
# with the running kernel, the uptime at init, and the status.
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
exchange=$1
scratch=$2
kind=$3
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t tmpfs tmp /tmp
mount -t tmpfs run /run
mkdir -p /dev/shm && mount -t tmpfs shm /dev/shm
# the host's scratch root, writable: the plan's scratch directories, and EXCHANGE inside it
case "$kind" in
  vm) mount -t 9p -o trans=virtio,version=9p2000.L,cache=none,msize=262144 triage-scratch "$scratch" ;;
  uml) mount -t hostfs none "$scratch" -o "$scratch" ;;
esac
echo "@@TRIAGE-KERNEL $(uname -r)"
echo "@@TRIAGE-UPTIME-AT-INIT $(cut -d' ' -f1 /proc/uptime)"
set --
i=0
while [ -e "$exchange/arg.$i" ]; do
  word=$(cat "$exchange/arg.$i"; echo x)  # the x keeps trailing newlines of the word
  set -- "$@" "${word%x}"
  i=$((i + 1))
done
cwd=$(cat "$exchange/cwd")
started=$(cut -d' ' -f1 /proc/uptime)
if cd "$cwd"; then
  "$@" >"$exchange/stdout" 2>"$exchange/stderr" </dev/null
  status=$?
else
  status=126
fi
finished=$(cut -d' ' -f1 /proc/uptime)
echo "$started $finished" >"$exchange/times"
echo "$status" >"$exchange/status"
sync
echo "@@TRIAGE-STATUS $status"
# UML powers off (its process exits); QEMU's x86 guest has no ACPI to power off with, so it
# reboots and QEMU's -no-reboot ends it.
case "$kind" in
  vm) exec /bin/busybox reboot -f ;;
  *) exec /bin/busybox poweroff -f ;;
esac
