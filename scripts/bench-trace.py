#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Summarises one VM's trace of a benchmark run (scripts/bench.sh --trace), in the guest.

    bench-trace.py TEST < /sys/kernel/tracing/trace

The trace holds rrxe's packet events (rrxe_pkt_tx after a packet was handed to the IP
layer, rrxe_pkt_rx when its QP's run took it), the device layer's (net_dev_queue: a frame
handed to it; net_dev_start_xmit, net_dev_xmit: the driver given a frame and done with
it; netif_receive_skb: a frame came up from the driver), the virtio interrupts and the
scheduler's switches, for about a second of TEST. Every line printed is one finding:
  window <ms> events <n> idle <percent>
  count <event>[:<opcode>] <n>
  qdisc <n> p50 <us> p90 <us> p99 <us>      a frame handed down -> given to the driver
  driver <n> p50 <us> p90 <us> p99 <us>     given to the driver -> the driver returned
  flow <what> pkts <n> rate <Gb/s of payload> gap_p50 <us> gap_p99 <us> stalls <n> stalled <percent>
      data frames' departures or arrivals; a stall: a gap of more than 200 us
  read_out avg <pkts> p50 <pkts> max <pkts> (npkts <n per request>)   a READ requester
  read_rtt n <n> p50 <us> p90 <us>            request sent -> its first response taken
  read_turn n <n> first_p50 <us> last_p50 <us>  a READ responder: request taken -> its
      first and last response sent
  cycle share <percent> n <n> <event>@<us> ...  a latency test's median cycle, from this
      VM's own request packet to the next
"""
import re
import sys
from collections import Counter

LINE = re.compile(r'^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+(?:\S+\s+)?([\d.]+):\s+(\w+):\s+(.*)$')
KV = re.compile(r'(\w+)=(\S+)')
REQUESTS = {'RC_WRITE_ONLY', 'RC_SEND_ONLY', 'RC_READ_REQUEST', 'RC_WRITE_ONLY_IMM',
            'RC_SEND_ONLY_IMM'}


def pct(v, p):
    if not v:
        return 0.0
    s = sorted(v)
    return s[min(len(s) - 1, int(p / 100.0 * len(s)))]


def parse(lines):
    ev = []
    for line in lines:
        m = LINE.match(line)
        if not m:
            continue
        comm, _pid, _cpu, ts, name, rest = m.groups()
        f = dict(KV.findall(rest))
        if name == 'sched_switch':
            nxt = rest.split('==>')[-1]
            f = {'next': dict(KV.findall(nxt)).get('next_comm', '?')}
        ev.append((float(ts) * 1e6, name, f, comm))
    return ev


def label(name, f):
    if name.startswith('rrxe_pkt'):
        return '%s:%s' % (name[5:], f.get('opcode', '?'))
    if name == 'sched_switch':
        n = f['next']
        for k in ('kworker', 'ksoftirqd', 'swapper'):
            if n.startswith(k):
                return 'run:' + k
        return 'run:' + n
    if name == 'irq_handler_entry':
        return 'irq:' + f.get('name', '?')
    return {'net_dev_queue': 'queue', 'net_dev_start_xmit': 'start_xmit', 'net_dev_xmit': 'xmit',
            'netif_receive_skb': 'recv'}.get(name, name)


def flow(what, times, sizes, window):
    if len(times) < 2:
        return
    gaps = [b - a for a, b in zip(times, times[1:])]
    stalls = [g for g in gaps if g > 200]
    gbps = sum(sizes) * 8 / (window * 1e3) if window > 0 else 0
    print('flow %s pkts %d rate %.3f gap_p50 %.1f gap_p99 %.1f stalls %d stalled %.1f' %
          (what, len(times), gbps, pct(gaps, 50), pct(gaps, 99), len(stalls),
           100.0 * sum(stalls) / window if window > 0 else 0))


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ('-h', '--help'):
        print(__doc__.strip())
        sys.exit(0 if len(sys.argv) == 2 else 2)
    test = sys.argv[1]
    ev = parse(sys.stdin)
    if len(ev) < 2:
        print('empty trace')
        return
    t0, t1 = ev[0][0], ev[-1][0]
    window = t1 - t0
    idle, last, was_idle = 0.0, t0, False
    for t, name, f, _ in ev:
        if name == 'sched_switch':
            if was_idle:
                idle += t - last
            last, was_idle = t, f['next'].startswith('swapper')
    if was_idle:
        idle += t1 - last
    print('window %.1f events %d idle %.1f' % (window / 1e3, len(ev), 100.0 * idle / window))
    counts = Counter(label(n, f) for _, n, f, _ in ev if n != 'sched_switch')
    for k, v in sorted(counts.items()):
        print('count %s %d' % (k, v))

    tx = [(t, f) for t, n, f, _ in ev if n == 'rrxe_pkt_tx']
    rx = [(t, f) for t, n, f, _ in ev if n == 'rrxe_pkt_rx']
    xmit = [(t, int(f.get('len', 0))) for t, n, f, _ in ev if n == 'net_dev_xmit']
    recv = [(t, int(f.get('len', 0))) for t, n, f, _ in ev if n == 'netif_receive_skb']
    # The k-th frame handed to the device layer is the k-th the driver is given and the
    # k-th it returns, while nothing else is sent (the VM sends only rrxe's packets during
    # a run): matched in order only then. qdisc: handed down -> given to the driver;
    # driver: given -> returned (virtio-net's start_xmit, its notification of the device
    # included).
    queued = [t for t, n, f, _ in ev if n == 'net_dev_queue']
    started = [t for t, n, f, _ in ev if n == 'net_dev_start_xmit']
    for what, a, b in (('qdisc', queued, started), ('driver', started, [t for t, _ in xmit])):
        if a and b and abs(len(a) - len(b)) <= max(2, len(a) // 100):
            d = [y - x for x, y in zip(a, b)]
            print('%s %d p50 %.1f p90 %.1f p99 %.1f' % (what, len(d), pct(d, 50), pct(d, 90), pct(d, 99)))
    data = 256
    flow('tx-rrxe', [t for t, f in tx if int(f.get('len', 0)) >= data],
         [int(f['len']) for t, f in tx if int(f.get('len', 0)) >= data], window)
    flow('tx-wire', [t for t, n in xmit if n >= data], [n for t, n in xmit if n >= data], window)
    flow('rx-wire', [t for t, n in recv if n >= data], [n for t, n in recv if n >= data], window)
    flow('rx-rrxe', [t for t, f in rx if int(f.get('len', 0)) >= data],
         [int(f['len']) for t, f in rx if int(f.get('len', 0)) >= data], window)

    if test.startswith('ib_read'):
        reqs = [(t, int(f['psn'])) for t, f in tx if f.get('opcode') == 'RC_READ_REQUEST']
        if len(reqs) > 2:
            steps = Counter(b[1] - a[1] for a, b in zip(reqs, reqs[1:]) if b[1] > a[1])
            npk = steps.most_common(1)[0][0] if steps else 1
            resp = [(t, int(f['psn'])) for t, f in rx if 'READ_RESPONSE' in f.get('opcode', '')]
            merged = sorted([(t, 0, p) for t, p in reqs] + [(t, 1, p) for t, p in resp])
            hi_req = hi_resp = None
            samples, prev_t, area = [], None, 0.0
            for t, kind, p in merged:
                if kind == 0:
                    hi_req = p + npk if hi_req is None else max(hi_req, p + npk)
                else:
                    hi_resp = p + 1 if hi_resp is None else max(hi_resp, p + 1)
                if hi_req is not None and hi_resp is not None:
                    out = max(0, hi_req - hi_resp)
                    if prev_t is not None:
                        area += samples[-1] * (t - prev_t)
                    samples.append(out)
                    prev_t = t
            span = (merged[-1][0] - merged[0][0]) or 1
            if samples:
                print('read_out avg %.1f p50 %d max %d (npkts %d)' %
                      (area / span, pct(samples, 50), max(samples), npk))
            first = {}
            for t, p in resp:
                first.setdefault(p, t)
            rtt = [first[p] - t for t, p in reqs if p in first and first[p] >= t]
            print('read_rtt n %d p50 %.1f p90 %.1f' % (len(rtt), pct(rtt, 50), pct(rtt, 90)))
        rreq = [(t, int(f['psn'])) for t, f in rx if f.get('opcode') == 'RC_READ_REQUEST']
        if len(rreq) > 2:
            sent = {}
            for t, f in tx:
                if 'READ_RESPONSE' in f.get('opcode', ''):
                    sent.setdefault(int(f['psn']), t)
            steps = Counter(b[1] - a[1] for a, b in zip(rreq, rreq[1:]) if b[1] > a[1])
            npk = steps.most_common(1)[0][0] if steps else 1
            fst = [sent[p] - t for t, p in rreq if p in sent]
            lst = [sent[p + npk - 1] - t for t, p in rreq if p + npk - 1 in sent]
            print('read_turn n %d first_p50 %.1f last_p50 %.1f' %
                  (len(fst), pct(fst, 50), pct(lst, 50)))

    if test.endswith('_lat'):
        # Cycles from one of this VM's own request packets to the next.
        anchors = [i for i, (t, n, f, _) in enumerate(ev)
                   if n == 'rrxe_pkt_tx' and f.get('opcode') in REQUESTS]
        cycles = Counter()
        offs = {}
        for a, b in zip(anchors, anchors[1:]):
            seq = tuple(label(n, f) for _, n, f, _ in ev[a + 1:b + 1])
            cycles[seq] += 1
            offs.setdefault(seq, []).append([t - ev[a][0] for t, _, _, _ in ev[a + 1:b + 1]])
        if cycles:
            seq, n = cycles.most_common(1)[0]
            med = [pct([o[i] for o in offs[seq]], 50) for i in range(len(seq))]
            allc = [o[-1] for s in offs for o in offs[s]]
            print('cycle all n %d p50 %.1f' % (len(allc), pct(allc, 50)))
            print('cycle share %.1f n %d %s' % (100.0 * n / sum(cycles.values()), n,
                                                ' '.join('%s@%.1f' % (s, m) for s, m in zip(seq, med))))


if __name__ == '__main__':
    main()
