#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vms: 2
# timeout: 420
# append: kmemleak=on
# The capture netdev (debugfs rrxe/<dev>/capture; docs/capture.md): writing 1 makes rrxe0cap,
# an Ethernet interface, up, without ARP (a writer without CAP_NET_ADMIN is refused), 0
# removes it. tcpdump on it records a loopback ib_write_bw on VM 0, which never reaches a
# netdev, and two ibv_rc_pingpongs between the VMs (1024 and 4099 bytes); tshark decodes every frame as RoCEv2 with
# the opcodes of each (RDMA WRITE FIRST/MIDDLE/LAST, SEND ONLY, ACKNOWLEDGE), the PSNs of
# each flow go up by one with no gap, the pingpong's frames are there in both directions,
# every ICRC is right (tests/vm/lib/pcap-icrc.py), and capture_pkts counts them. A capture
# netdev goes with its namespace (VM 1, exclusive mode) and with `rdma link delete`, and
# kmemleak finds nothing unreferenced after the module is gone.
. "$RRXE_ROOT/tests/vm/lib/guest-lib.sh"
. "$RRXE_ROOT/tests/vm/lib/user-common.sh"
. "$RRXE_ROOT/tests/vm/lib/kmemleak.sh"


# mark WHAT: the guest's uptime at a step, as a comment (where this test's time goes).
mark() { local u; read -r u _ < /proc/uptime; echo "# ${u} s: $*"; }

W=$(mktemp -d)
kml_start
user_setup
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
C=/sys/kernel/debug/rrxe/$DEV/capture
CAP=${DEV}cap
check "the capture file $C exists, mode 0600, empty" sh -c "test \"\$(stat -c %a $C)\" = 600 && test ! -s $C"
check "no $CAP before it is asked for" sh -c "! ip link show $CAP"
if [ "$RRXE_VM" = 1 ]; then
  # (VM 1 only: it has time while VM 0 runs its loopback step.)
  check "a writer without CAP_NET_ADMIN is refused with EPERM" \
    test "$(errno_of_write "$C" 1 setpriv --bounding-set -net_admin)" = EPERM
  check "a value other than 0 or 1 is refused with EINVAL" test "$(errno_of_write "$C" yes)" = EINVAL
fi
check "writing 1 makes $CAP; the file reads its name" sh -c "echo 1 > $C && test \"\$(cat $C)\" = $CAP"
check "$CAP is an Ethernet interface, up, without ARP" sh -c \
  "ip link show $CAP && ip link show $CAP | grep -q 'link/ether' &&
   ip link show $CAP | grep -q '[<,]NOARP[,>]' && ip link show $CAP | grep -q '[<,]UP[,>]'"
check "writing 1 again keeps it" sh -c "echo 1 > $C && test \"\$(cat $C)\" = $CAP && ip link show $CAP"
check "writing 0 removes it" sh -c "echo 0 > $C && test ! -s $C && ! ip link show $CAP"
check "writing 1 makes it again" sh -c "echo 1 > $C && ip link show $CAP"

mark "capture netdev checked"
before=$(dev_counter capture_pkts)
# -Z root: tcpdump would otherwise write its file as the user tcpdump. --immediate-mode
# and -U: each frame reaches the file as it comes (without them, the frames of a block that
# is not full yet are lost when tcpdump is stopped).
tcpdump -i "$CAP" -w "$W/cap.pcap" -U --immediate-mode -Z root -n 2> "$W/tcpdump.err" &
TP=$!
check "tcpdump listens on $CAP" retry 60 0.25 grep -q "listening on" "$W/tcpdump.err"

if [ "$RRXE_VM" = 0 ]; then
  # 4 KiB WRITEs: four packets each at the 1024-byte IB MTU of a 1500-byte Ethernet MTU.
  both "loopback ib_write_bw 4 KiB x10 (captured)" -- \
    ib_write_bw -d "$DEV" -x "$GID" -p 18701 -s 4096 -n 10 -F -- \
    ib_write_bw -d "$DEV" -x "$GID" -p 18701 -s 4096 -n 10 -F "$RRXE_MY_IP"
else
  # Meanwhile on VM 1, a capture netdev whose namespace is deleted (exclusive mode: a
  # device added inside a namespace, on a veth end there): the namespace's exit
  # unregisters it, the core brings the device back to init_net, and the veth's deletion
  # removes the device.
  check "rdma system set netns exclusive" rdma system set netns exclusive
  check "namespace capns with a veth end cv1" sh -c 'modprobe -d "$RRXE_MODROOT" veth &&
    ip netns add capns && ip link add cv0 type veth peer name cv1 netns capns &&
    ip -n capns addr add 10.99.0.2/24 dev cv1 && ip -n capns link set cv1 up'
  check "rdma link add rrxe9 inside capns" ip netns exec capns rdma link add rrxe9 type rrxe netdev cv1
  check "rrxe9's capture netdev rrxe9cap is made in capns" sh -c \
    'echo 1 > /sys/kernel/debug/rrxe/rrxe9/capture && ip -n capns link show rrxe9cap'
  check "ip netns delete capns" ip netns delete capns
  gone9() { ! ip link show rrxe9cap 2>/dev/null && ! rdma dev show rrxe9 >/dev/null 2>&1 &&
            ! test -e /sys/kernel/debug/rrxe/rrxe9; }
  check "rrxe9cap went with capns, rrxe9 with its veth" retry 120 0.25 gone9
fi
pair "ibv_rc_pingpong 1 KiB x5 between the VMs (captured)" 120 -- \
  ibv_rc_pingpong -d @DEV -g @GID -p 18702 -n 5 -s 1024 -c -- \
  ibv_rc_pingpong -d @DEV -g @GID -p 18702 -n 5 -s 1024 -c @PEER
# A message of 4099 bytes: its last packet's payload (3 bytes) is not a multiple of the
# 8 bytes the transmit copy's CRC loop takes at a time.
pair "ibv_rc_pingpong 4099 B x3 between the VMs (captured)" 120 -- \
  ibv_rc_pingpong -d @DEV -g @GID -p 18703 -n 3 -s 4099 -c -- \
  ibv_rc_pingpong -d @DEV -g @GID -p 18703 -n 3 -s 4099 -c @PEER
mark "traffic done"
after=$(dev_counter capture_pkts)
# Once tcpdump has written every frame the counter counts (it reads the file again until
# then), each frame's ICRC.
icrc=$(python3 "$RRXE_ROOT/tests/vm/lib/pcap-icrc.py" "$W/cap.pcap" "$((after - before))")
kill -INT "$TP"; wait "$TP"
sed 's/^/# tcpdump: /' "$W/tcpdump.err"
check "nothing was sent through $CAP" test "$(< /sys/class/net/$CAP/statistics/tx_packets)/$(< /sys/class/net/$CAP/statistics/tx_dropped)" = 0/0

# (tshark takes about 40 s to start in a TCG guest, most of this test's time.)
tshark -r "$W/cap.pcap" -d udp.port==4791,infiniband -T fields -E separator=' ' \
  -e ip.src -e ip.dst -e infiniband.bth.opcode -e infiniband.bth.destqp -e infiniband.bth.psn \
  > "$W/frames" 2> "$W/tshark.err"
mark "decoded"
check "tshark reads the capture" test -s "$W/frames"
[ -s "$W/frames" ] || sed 's/^/# tshark: /' "$W/tshark.err"
n=$(wc -l < "$W/frames")
echo "# $n frames; capture_pkts $before -> $after; ICRC: $icrc"
check "every frame's ICRC is right ($icrc)" test "$icrc" = "frames $n good $n bad 0"
check "capture_pkts counts the frames tcpdump wrote, and tshark reads them all ($before -> $after, $n frames)" \
  test "$((after - before))" = "$n"

# frames_check: python3 over the decoded frames: ARGS are checks of the form
# NAME=VALUE (my=IP peer=IP loopback=0|1); prints one line per failed check, nothing if all pass.
frames_check() {
  python3 - "$W/frames" "$@" <<'PY'
import sys
a = dict(x.split("=", 1) for x in sys.argv[2:])
me, peer, loop = a["my"], a["peer"], a["loopback"] == "1"
frames, bad = [], []
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) != 5:
        bad.append("not decoded as RoCEv2: " + line.strip())
        continue
    frames.append((f[0], f[1], int(f[2], 0), int(f[3], 0), int(f[4], 0)))
ops = lambda s, d: {o for (x, y, o, q, p) in frames if (x, y) == (s, d)}
# RC opcodes: SEND ONLY 0x04, RDMA WRITE FIRST/MIDDLE/LAST 0x06/0x07/0x08, ACKNOWLEDGE 0x11.
need = {(me, peer): {0x04, 0x11}, (peer, me): {0x04, 0x11}}
if loop:
    need[(me, me)] = {0x06, 0x07, 0x08, 0x11}
for (s, d), want in need.items():
    got = ops(s, d)
    if not want <= got:
        bad.append(f"{s} -> {d}: opcodes {sorted(got)}, missing {sorted(want - got)}")
# Per flow (source, destination, destination QP), requests and acknowledgements apart: each
# new request PSN is the last one plus one (a retransmission may repeat older ones, never
# skip); an acknowledgement's PSN never goes back (one acknowledges several requests).
last = {}
for (s, d, o, q, p) in frames:
    k = (s, d, q, o == 0x11)
    if k not in last:
        last[k] = p
        continue
    step = (p - last[k]) % (1 << 24)
    if k[3]:
        if step >= (1 << 23):
            bad.append(f"{s} -> {d} QP {q:#x}: ACK PSN {last[k]:#x} then {p:#x}")
        last[k] = p
    elif step == 1:
        last[k] = p
    elif step < (1 << 23) and step != 0:
        bad.append(f"{s} -> {d} QP {q:#x}: PSN {last[k]:#x} then {p:#x}")
for b in bad[:10]:
    print(b)
PY
}
res=$(frames_check my="$RRXE_MY_IP" peer="$RRXE_PEER_IP" loopback=$([ "$RRXE_VM" = 0 ] && echo 1 || echo 0))
check "every frame decodes as RoCEv2 with the expected opcodes, both directions, PSNs without gaps" \
  test -z "$res"
[ -z "$res" ] || echo "$res" | sed 's/^/# /'
mark "frames checked"

show_counters
check "rdma link delete $DEV" rdma link delete "$DEV"
check "$CAP went with $DEV" sh -c "! ip link show $CAP"
check "rmmod rrxe" rmmod rrxe
kml_check "after the captures, link delete and rmmod rrxe"
rm -rf "$W"
tap_done
