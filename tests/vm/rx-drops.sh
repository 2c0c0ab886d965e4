#!/bin/bash
# vms: 2
# timeout: 240
# Malformed and unroutable datagrams to UDP 4791 (IPv4 and IPv6) from the peer VM are
# counted as drops by reason in `rdma statistic`, with no splat.
. "$RRXE_ROOT/qemu/guest-lib.sh"

counter() { rdma statistic show link rrxe0/1 | tr ' ' '\n' | awk -v n="$1" 'f {print; exit} $0 == n {f=1}'; }
at_least() { local v; v=$(counter "$1"); [ -n "$v" ] && [ "$v" -ge "$2" ]; }

if [ "$RRXE_VM" = 0 ]; then
  check "insmod rrxe.ko" load_rrxe
  check "rdma link add rrxe0" rdma link add rrxe0 type rrxe netdev eth0
  check "rdma statistic lists the rrxe counters" sh -c 'rdma statistic show link rrxe0/1 | grep -q rx_drop_truncated'
  check "truncated datagrams counted (rx_drop_truncated >= 20)" retry 60 0.5 at_least rx_drop_truncated 20
  check "datagrams for no QP counted (rx_drop_no_qp >= 20)" retry 60 0.5 at_least rx_drop_no_qp 20
  check "every datagram counted as received (rcvd_pkts >= 40)" at_least rcvd_pkts 40
  rdma statistic show link rrxe0/1 | sed 's/^/# /'
  touch /run/done
  check "rmmod rrxe" sh -c 'rdma link delete rrxe0 && rmmod rrxe'
else
  # Send batches for a while: the peer counts whatever arrives after its device exists.
  check "send malformed datagrams to 4791 (IPv4 and IPv6)" python3 - "$RRXE_PEER_IP" "fd77::1" <<'PY'
import socket, sys, time
v4, v6 = sys.argv[1], sys.argv[2]
s4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
bth_like = bytes([0x04, 0x40, 0xff, 0xff, 0, 0, 0, 0x11, 0, 0, 0, 1]) + bytes(4)
for _ in range(25):
    for s, a in ((s4, v4), (s6, v6)):
        for payload in (b"\x00", b"short", bth_like):
            s.sendto(payload, (a, 4791))
    time.sleep(1)
PY
fi
tap_done
