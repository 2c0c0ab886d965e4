# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Helpers for the user-verbs VM tests (source after guest-lib.sh): rrxe0 over eth0, and
# client/server pairs run in lockstep on the two VMs (VM 0 serves, VM 1 connects, retrying
# until the server listens). Every pair uses its own port, so a client can never reach the
# server of another step.

# user_setup [rrxe|rxe]: this VM's RDMA device over $RRXE_NETDEV (eth0 in our VMs) (DEV),
# and its RoCE v2 GID index (GID). Outside our VMs (tests/selftest.sh) an rrxe device the
# machine already has on that netdev (any name), or RRXE_DEV, is used and left in place
# (KEEP_DEV).
user_setup() {
  local kind=${1:-rrxe} nd=${RRXE_NETDEV:-eth0}
  KEEP_DEV=
  if [ "$kind" = rxe ]; then
    DEV=rxe0
    check "modprobe rdma_rxe" load_rxe
    check "rdma link add rxe0 type rxe netdev $nd" rdma link add rxe0 type rxe netdev "$nd"
  else
    DEV=${RRXE_DEV:-}
    if [ -z "$DEV" ]; then
      # An rrxe device by what it is (its hca_type attribute), whatever its name.
      local d
      for d in $(rdma link show 2>/dev/null |
                 awk -v nd="$nd" '/ netdev / && $NF == nd { sub(/\/.*/, "", $2); print $2 }'); do
        if [ "$(cat "/sys/class/infiniband/$d/hca_type" 2>/dev/null)" = rrxe ]; then DEV=$d; break; fi
      done
    fi
    if [ -n "$DEV" ]; then
      KEEP_DEV=1
      ok "using the machine's $DEV (left in place afterwards)"
    else
      DEV=rrxe0
      check "insmod rrxe.ko" load_rrxe
      check "rdma link add rrxe0 type rrxe netdev $nd" rdma link add rrxe0 type rrxe netdev "$nd"
    fi
  fi
  GID=$(retry 20 0.3 gid_index_v4 "$DEV" "$RRXE_MY_IP") || GID=
  if [ -n "$GID" ]; then ok "$DEV has a RoCE v2 GID for $RRXE_MY_IP (index $GID)"
  else not_ok "$DEV has a RoCE v2 GID for $RRXE_MY_IP"; GID=0; fi
}

# pair DESCRIPTION TIMEOUT -- SERVER ARGS... -- CLIENT ARGS...
#   VM 0 runs SERVER ARGS, VM 1 runs CLIENT ARGS. The literal words @DEV, @GID and @PEER in
#   the arguments become this VM's device, its GID index and the peer's address. Each side
#   checks its own exit status.
#   When the server's port is in its arguments (-p N, --port N, --port=N), the client starts
#   only once the server listens on it: VM 0 sees the listening socket or rdma_cm ID and
#   signals VM 1 (serve, after_server). Without that, a client that tried too early could
#   have one of its connections accepted and then abandoned: ucmatose -c 2 had its first
#   REQ refused, its second reached the new listener, and the retried client's predecessor
#   rejected it on exit, so the server's rdma_create_qp found the CM ID gone (EINVAL in
#   rdma_init_qp_attr) and the whole step failed. Servers without a port keep the old
#   way: the client is retried while it cannot reach its server.
pair() {
  local desc=$1 t=$2 side=server; shift 3
  local srv=() cli=() a
  for a in "$@"; do
    if [ "$a" = "--" ]; then side=client; continue; fi
    a=${a//@GID/$GID}; a=${a//@PEER/$RRXE_PEER_IP}; a=${a//@DEV/$DEV}
    if [ "$side" = server ]; then srv+=("$a"); else cli+=("$a"); fi
  done
  local failed_before=$TAP_FAILED
  # rping runs through tests/vm/lib/rping-run (rping's own teardown race).
  local run=("${cli[@]}") srun=("${srv[@]}")
  [ "${run[0]}" = rping ] && run[0]=$RRXE_ROOT/tests/vm/lib/rping-run
  [ "${srun[0]}" = rping ] && srun[0]=$RRXE_ROOT/tests/vm/lib/rping-run
  local port sig=
  port=$(port_of "${srv[@]}") && [ "$port" -le 64535 ] && sig=$((port + 1000))
  if [ "$RRXE_VM" = 0 ]; then
    if [ -n "$sig" ]; then
      check "$desc (server: ${srv[*]})" serve "$t" "$port" "$sig" "${srun[@]}"
    else
      check "$desc (server: ${srv[*]})" timeout "$t" "${srun[@]}"
    fi
  else
    # Up to 60 tries: a server can take half a minute to listen after a heavy step (the
    # previous process's QPs still being torn down).
    if [ -n "$sig" ]; then
      check "$desc (client: ${cli[*]})" after_server "$t" "$sig" until_connected 60 timeout "$t" "${run[@]}"
    else
      check "$desc (client: ${cli[*]})" until_connected 60 timeout "$t" "${run[@]}"
    fi
  fi
  # A failed step shows this side's device counters (drops, retransmits, NAKs).
  [ "$TAP_FAILED" = "$failed_before" ] || show_counters
}

# The other VM's address in this VM's namespace (a step may set RRXE_PEER_IP to a pod's).
PEER_VM_IP=$RRXE_PEER_IP

# port_of ARGS...: the port a server command names (-p N, --port N or --port=N).
port_of() {
  local prev= a
  for a in "$@"; do
    if [[ $prev == -p || $prev == --port ]] && [[ $a =~ ^[0-9]+$ ]]; then echo "$a"; return 0; fi
    if [[ $a =~ ^--port=([0-9]+)$ ]]; then echo "${BASH_REMATCH[1]}"; return 0; fi
    prev=$a
  done
  return 1
}

# ns_of ARGS...: the namespace prefix a command runs under (the words `ip netns exec NAME`),
# as the array NS (empty for the VM's own namespace).
ns_of() {
  NS=()
  if [ "$1" = ip ] && [ "$2" = netns ] && [ "$3" = exec ]; then NS=(ip netns exec "$4"); fi
}

# listening PORT: something in this namespace listens on PORT: a TCP socket (the pingpong
# tools' and perftest's handshake) or an rdma_cm ID (rping, ucmatose, rdma_server, perftest
# -R; `rdma resource` shows it in state LISTEN with its source port).
listening() {
  [ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ] ||
    rdma resource show cm_id 2>/dev/null | grep -q "state LISTEN .*:$1 "
}

# serve T PORT SIGPORT CMD...: VM 0's side of a pair. Runs `timeout T CMD` in the
# background; once it listens on PORT (or has exited), tells the client's VM so by a TCP
# connection to its SIGPORT, from the server's namespace to the client's address (the pair's
# own path); then waits for the server and prints its output. Exit status: the server's.
serve() {
  local t=$1 port=$2 sig=$3 out pid spid rc i; shift 3
  ns_of "$@"
  out=$(mktemp)
  timeout "$t" "$@" > "$out" 2>&1 &
  pid=$!
  for ((i = 0; i < t * SCALE * 5; i++)); do
    "${NS[@]}" bash -c "$(declare -f listening); listening $port" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  # To the pair's peer address, and to the other VM's own one (a pair between a pod and the
  # other host sets RRXE_PEER_IP to the pod's address on both sides). The client's VM may
  # still be finishing the previous step: retried for a minute.
  local to=$RRXE_PEER_IP
  [ "$PEER_VM_IP" != "$RRXE_PEER_IP" ] && to+=" $PEER_VM_IP"
  "${NS[@]}" bash -c "for i in \$(seq $((120 * SCALE))); do for a in $to; do
      (exec 3<>/dev/tcp/\$a/$sig) 2>/dev/null && exit 0; done; sleep 0.5; done; exit 1" &
  spid=$!
  wait "$pid"; rc=$?
  wait "$spid" || echo "(the client's VM never took the signal on port $sig)"
  cat "$out"; rm -f "$out"
  return "$rc"
}

# after_server T SIGPORT CMD...: VM 1's side of a pair. Waits (in CMD's namespace) up to
# T x SCALE seconds for VM 0's signal that the server listens (peer_wait), then runs CMD.
after_server() {
  local t=$1 sig=$2; shift 2
  local c=("$@")
  while [[ ${c[0]} == until_connected || ${c[0]} == timeout ]]; do c=("${c[@]:2}"); done
  ns_of "${c[@]}"
  "${NS[@]}" bash -c "SCALE=$SCALE; $(declare -f peer_wait); peer_wait $sig $t" ||
    echo "(no signal from the server in $((t * SCALE)) s)"
  "$@"
}

# What the client tools print when nobody listens yet (perftest and the ibv_*_pingpong
# tools over TCP, rdma_cm tools through a CM reject or unreachable event).
NOT_CONNECTED='Couldn.t connect|Unable to init the socket|Connection refused|REJECTED|UNREACHABLE|connect error'

# until_connected N CMD...: runs the client CMD up to N times, 1 s apart, while it fails
# without having reached its server. A client that connected and then failed is not run
# again, so the output shown is that of the run that failed, not of a later retry that
# could not connect.
until_connected() {
  local n=$1 i=1 out rc first=; shift
  while :; do
    out=$("$@" 2>&1); rc=$?
    if [ "$rc" = 0 ] || [ "$i" -ge "$n" ] || ! grep -qE "$NOT_CONNECTED" <<<"$out"; then
      [ "$i" -gt 1 ] && echo "(attempt $i; attempt 1 ended: $(tail -n 3 <<<"$first" | tr '\n' '|'))"
      echo "$out"
      return "$rc"
    fi
    [ "$i" = 1 ] && first=$out
    i=$((i + 1))
    sleep 1
  done
}

# both DESC -- SERVER... -- CLIENT...: a loopback pair on this VM, the server in the
# background and the client (retried) once it listens; both must exit 0.
both() {
  local desc=$1 side=s srv=() cli=() a; shift 2
  for a in "$@"; do
    if [ "$a" = -- ]; then side=c; continue; fi
    if [ $side = s ]; then srv+=("$a"); else cli+=("$a"); fi
  done
  local so sp co crc src
  so=$(mktemp)
  timeout 120 "${srv[@]}" > "$so" 2>&1 &
  sp=$!
  # rping runs through tests/vm/lib/rping-run (rping's own teardown race).
  [ "${cli[0]}" = rping ] && cli[0]=$RRXE_ROOT/tests/vm/lib/rping-run
  [ "${srv[0]}" = rping ] && srv[0]=$RRXE_ROOT/tests/vm/lib/rping-run
  co=$(retry 20 0.5 timeout 120 "${cli[@]}" 2>&1); crc=$?
  wait "$sp"; src=$?
  if [ "$crc" = 0 ] && [ "$src" = 0 ]; then ok "$desc"
  else
    not_ok "$desc (server exit $src, client exit $crc)"
    { echo "server:"; tail -n 15 "$so"; echo "client:"; echo "$co" | tail -n 15; } | sed 's/^/# /'
  fi
  rm -f "$so"
}

# show_counters: this VM's RDMA device counters as TAP comments.
show_counters() {
  rdma statistic show link "$DEV"/1 2>/dev/null | tr ' ' '\n' | paste -sd' ' | sed 's/^/# /'
}

# user_teardown: the counters, then the link goes away cleanly.
user_teardown() {
  show_counters
  [ -n "$KEEP_DEV" ] && return 0
  check "rdma link delete $DEV" rdma link delete "$DEV"
  if [ "$DEV" = rrxe0 ]; then check "rmmod rrxe" rmmod rrxe; fi
}

# relay_tap NAME RC OUTPUT: the TAP lines of a test program's OUTPUT become this script's
# (renumbered, prefixed with NAME), other lines become comments; then its exit status RC.
relay_tap() {
  local name=$1 rc=$2 l
  while IFS= read -r l; do
    case "$l" in
      "ok "*) ok "$name: ${l#ok * - }" ;;
      "not ok "*) not_ok "$name: ${l#not ok * - }" ;;
      "Bail out!"*) not_ok "$name: $l" ;;
      "1.."*) ;;
      *) echo "# $l" ;;
    esac
  done <<< "$3"
  if [ "$rc" = 0 ]; then ok "$name exit status 0"; else not_ok "$name exit status $rc"; fi
}

# dev_counter NAME [DEV]: the port counter NAME of DEV (default $DEV; `rdma statistic`, read
# fresh).
dev_counter() { rdma statistic show link "${2:-$DEV}/1" | tr ' ' '\n' | awk -v n="$1" 'f {print; exit} $0 == n {f=1}'; }

# frames_start NS IFACE FILE: tests/vm/lib/roce-capture.py on IFACE in namespace NS, into FILE
# (FILE.err), from when it listens; frames_stop FILE then stops it (in this shell: it waits
# for its child) and sets frames_n, the RoCEv2 frames that arrived, and frames_max, the
# longest one's bytes (empty if it printed none).
frames_start() {
  ip netns exec "$1" python3 "$RRXE_ROOT/tests/vm/lib/roce-capture.py" "$2" >"$3" 2>"$3.err" &
  frames_pid=$!
  retry 50 0.2 grep -q listening "$3.err"
}
frames_stop() {
  kill -TERM "$frames_pid"; wait "$frames_pid"
  frames_n=$(awk '{ sub(/^n=/, "", $NF); n += $NF } END { print n + 0 }' "$1")
  frames_max=$(sed -n 's/^max_frame=//p' "$1.err")
}

# errno_of_write FILE TEXT [CMD ARGS...]: writes TEXT to FILE in one write(2), run under CMD
# if given (setpriv ...); prints OK or the errno's name (the shell's echo reports every
# failed write as an I/O error).
errno_of_write() {
  local file=$1 text=$2; shift 2
  "$@" python3 -c 'import errno, os, sys
try:
    fd = os.open(sys.argv[1], os.O_WRONLY)
    os.write(fd, sys.argv[2].encode())
    print("OK")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))' "$file" "$text"
}
