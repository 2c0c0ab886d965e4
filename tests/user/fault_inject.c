// SPDX-License-Identifier: GPL-2.0
/*
 * Fault injection rules (debugfs rrxe/<dev>/faults) against loopback RC QPs: a dropped READ
 * response is recovered with the data right; seven drops in a row end one QP in
 * RETRY_EXC_ERR (retry_cnt 6) while another pair works on; a seeded probability picks the
 * same packets every run, the ones SplitMix64 says; a NAKed WRITE completes with
 * REM_ACCESS_ERR and nothing else changes; a forced RNR NAK makes the sender wait the
 * encoded time; a WRITE's 2nd packet held behind the 3rd (reorder) and a SEND held 30 ms
 * (delay) arrive, data right. Run as root with debugfs mounted: fault_inject -d DEV -g GIDX.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <time.h>

#include "tap.h"
#include "loop.h"

static char faults_path[256];

/* Writes text to the rules file; 0, or the errno of the write. */
static int rules_write(const char *text)
{
	int fd = open(faults_path, O_WRONLY);
	ssize_t n;
	int err = 0;

	if (fd < 0)
		return errno;
	n = write(fd, text, strlen(text));
	if (n < 0)
		err = errno;
	close(fd);
	return err;
}

/* The listing of the rules file into buf (NUL-terminated). */
static void rules_read(char *buf, size_t len)
{
	int fd = open(faults_path, O_RDONLY);
	size_t got = 0;
	ssize_t n;

	if (fd < 0)
		die("open faults");
	while (got + 1 < len && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += n;
	buf[got] = 0;
	close(fd);
}

/* The seen and hit counts of rule `id`, and whether it is retired; -1 if not listed. */
static int rule_counts(int id, uint64_t *seen, uint64_t *hits, int *retired)
{
	char buf[16384], want[32];
	char *line;

	rules_read(buf, sizeof(buf));
	snprintf(want, sizeof(want), "id=%d ", id);
	for (line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		char *s, *h;

		if (strncmp(line, want, strlen(want)))
			continue;
		s = strstr(line, " seen=");
		h = strstr(line, " hits=");
		if (!s || !h)
			return -1;
		*seen = strtoull(s + 6, NULL, 10);
		*hits = strtoull(h + 6, NULL, 10);
		*retired = strstr(line, " retired") != NULL;
		return 0;
	}
	return -1;
}

/* Clears the rules; new rules are numbered from 1 again. */
static void rules_clear(void)
{
	if (rules_write("clear\n"))
		die("clear rules");
}

/* Adds one rule (printf format) as rule `id` of a cleared set: ok() on the write. */
static void rule_add(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rule_add(const char *what, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int err;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	strcat(line, "\n");
	err = rules_write(line);
	ok(err == 0, "%s: rule accepted: %.*s (%s)", what, (int)strlen(line) - 1, line,
	   err ? strerror(err) : "ok");
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Posts one signaled RDMA op from a of c; 0 or die. */
static void post_a(struct loop_pair *c, enum ibv_wr_opcode op, void *buf, uint32_t len,
		   struct ibv_mr *lmr, uint64_t raddr, uint32_t rkey, uint64_t wr_id)
{
	struct ibv_sge s = { (uintptr_t)buf, len, lmr->lkey };
	struct ibv_send_wr w = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1, .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = { raddr, rkey } }, *bad;

	if (ibv_post_send(c->a, &w, &bad))
		die("ibv_post_send");
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr at;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &at, IBV_QP_STATE, &ia))
		die("ibv_query_qp");
	return at.qp_state;
}

/* The rule engine's generator (proto/src/fault.rs): SplitMix64. */
static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

#define BIG 4096
static uint8_t *lbuf, *rbuf;
static struct ibv_mr *lmr, *rmr;

/* The 3rd READ response packet QP a receives is lost once: recovered, data right. */
static void read_resp_dropped(void)
{
	struct loop_pair c;
	struct ibv_wc wc;
	uint64_t seen = 0, hits = 0;
	int retired, st, found;

	loop_pair_new(&c, 0);
	rules_clear();
	rule_add("read", "qp=%#x dir=rx op=read_resp nth=3 action=drop count=1", c.a->qp_num);
	loop_pattern(rbuf, BIG, 7);
	memset(lbuf, 0, BIG);
	/* 4 KiB at MTU 1024: four response packets. */
	post_a(&c, IBV_WR_RDMA_READ, lbuf, BIG, lmr, (uintptr_t)rbuf, rmr->rkey, 1);
	st = wait_wc(c.cqa, &wc);
	ok(st == IBV_WC_SUCCESS, "read: 4 KiB READ with its 3rd response lost completes (%d)", st);
	ok(!memcmp(lbuf, rbuf, BIG), "read: the data read equals the data there");
	found = !rule_counts(1, &seen, &hits, &retired);
	ok(found && hits == 1 && retired,
	   "read: the rule hit once and retired (hits %" PRIu64 ")", hits);
	loop_pair_free(&c);
}

/* Seven drops in a row of QP a's packets: RETRY_EXC_ERR at retry_cnt 6, exactly seven
 * hits; a second pair, working meanwhile, is not touched. */
static void retry_exceeded(void)
{
	struct loop_pair c, other;
	struct ibv_wc wc;
	uint64_t seen = 0, hits = 0;
	int retired, st, i, found;

	loop_pair_new_opts(&c, 0, 8, 6, 6);
	loop_pair_new(&other, 0);
	rules_clear();
	rule_add("retry", "qp=%#x dir=tx action=drop count=7", c.a->qp_num);
	post_a(&c, IBV_WR_RDMA_WRITE, lbuf, 64, lmr, (uintptr_t)rbuf, rmr->rkey, 2);
	for (i = 0, st = 0; i < 20 && st == IBV_WC_SUCCESS; i++) {
		loop_pattern(lbuf + 1024, 512, (uint8_t)i);
		st = loop_post_a(&other, IBV_WR_RDMA_WRITE, (uintptr_t)lbuf + 1024, 512, lmr->lkey,
				 (uintptr_t)rbuf + 1024, rmr->rkey);
	}
	ok(st == IBV_WC_SUCCESS && !memcmp(lbuf + 1024, rbuf + 1024, 512),
	   "retry: 20 WRITEs of another pair complete meanwhile, data right (%d)", st);
	st = wait_wc_ms(c.cqa, &wc, 10000);
	ok(st == IBV_WC_RETRY_EXC_ERR, "retry: retry_cnt 6 and 7 drops: IBV_WC_RETRY_EXC_ERR (%d)", st);
	found = !rule_counts(1, &seen, &hits, &retired);
	ok(found && hits == 7 && seen == 7 && retired,
	   "retry: the rule saw and hit 7 packets (seen %" PRIu64 ", hits %" PRIu64 ")", seen, hits);
	ok(qp_state(other.a) == IBV_QPS_RTS && qp_state(other.b) == IBV_QPS_RTS &&
	   qp_state(c.b) == IBV_QPS_RTS,
	   "retry: the other pair and the failed QP's peer are still in RTS");
	st = loop_post_a(&other, IBV_WR_RDMA_WRITE, (uintptr_t)lbuf, 64, lmr->lkey,
			 (uintptr_t)rbuf, rmr->rkey);
	ok(st == IBV_WC_SUCCESS, "retry: the other pair works after (%d)", st);
	loop_pair_free(&other);
	loop_pair_free(&c);
}

/* A seeded probability: two runs of the same traffic give the same counts, and the very
 * packets the generator picks. */
static void same_seed(void)
{
	const uint64_t seed = 42;
	const int writes = 40;
	uint64_t seen[2], hits[2], want = 0, state = seed;
	int retired, run, i;

	for (i = 0; i < writes; i++) {
		uint64_t x = splitmix64(&state);

		want += (uint64_t)(((unsigned __int128)x * 3) >> 64) < 1;
	}
	for (run = 0; run < 2; run++) {
		struct loop_pair c;
		int st = 0;

		/* A local ACK timeout of 67 ms: no retransmission adds a packet to count. */
		loop_pair_new_opts(&c, 0, 14, 2, 2);
		rules_clear();
		rule_add("seed", "qp=%#x dir=rx op=write prob=1/3 seed=%" PRIu64 " action=dup",
			 c.b->qp_num, seed);
		for (i = 0; i < writes && st == IBV_WC_SUCCESS; i++)
			st = loop_post_a(&c, IBV_WR_RDMA_WRITE, (uintptr_t)lbuf, 64, lmr->lkey,
					 (uintptr_t)rbuf, rmr->rkey);
		ok(st == IBV_WC_SUCCESS, "seed: run %d: %d WRITEs, some taken twice, complete (%d)",
		   run + 1, writes, st);
		if (rule_counts(1, &seen[run], &hits[run], &retired))
			seen[run] = hits[run] = UINT64_MAX;
		loop_pair_free(&c);
	}
	ok(seen[0] == seen[1] && hits[0] == hits[1],
	   "seed: same seed, same counts (seen %" PRIu64 "/%" PRIu64 ", hits %" PRIu64 "/%" PRIu64 ")",
	   seen[0], seen[1], hits[0], hits[1]);
	ok(seen[0] == (uint64_t)writes && hits[0] == want,
	   "seed: the generator's picks: %" PRIu64 " of %d (hits %" PRIu64 ")", want, writes, hits[0]);
}

/* The 2nd WRITE NAKed with a remote access error: REM_ACCESS_ERR at the sender, nothing
 * else fails (the responder stays in RTS with nothing completed, the 1st WRITE landed). */
static void nak_access(void)
{
	struct loop_pair c;
	struct ibv_wc wc;
	uint64_t seen = 0, hits = 0;
	int retired, st, found;

	loop_pair_new(&c, 0);
	rules_clear();
	rule_add("nak", "qp=%#x dir=rx op=write nth=2 action=nak:access count=1", c.b->qp_num);
	loop_pattern(lbuf, 256, 3);
	st = loop_post_a(&c, IBV_WR_RDMA_WRITE, (uintptr_t)lbuf, 256, lmr->lkey, (uintptr_t)rbuf,
			 rmr->rkey);
	ok(st == IBV_WC_SUCCESS && !memcmp(lbuf, rbuf, 256), "nak: the 1st WRITE lands (%d)", st);
	st = loop_post_a(&c, IBV_WR_RDMA_WRITE, (uintptr_t)lbuf, 256, lmr->lkey,
			 (uintptr_t)rbuf + 256, rmr->rkey);
	ok(st == IBV_WC_REM_ACCESS_ERR, "nak: the 2nd completes with IBV_WC_REM_ACCESS_ERR (%d)", st);
	ok(qp_state(c.b) == IBV_QPS_RTS && ibv_poll_cq(c.cqb, 1, &wc) == 0,
	   "nak: the responder is still in RTS, with no completion");
	found = !rule_counts(1, &seen, &hits, &retired);
	ok(found && hits == 1 && seen == 2,
	   "nak: the rule saw 2 WRITEs and hit 1 (seen %" PRIu64 ", hits %" PRIu64 ")", seen, hits);
	loop_pair_free(&c);
}

/*
 * One 256-byte SEND from a to b of c under the rule `fmt` (with b's QP number), which must
 * hold it back min_us at least: the SEND completes no sooner, arrives once with its data,
 * and the rule hits once and retires. `wait` says what held it, for the messages.
 */
static void held_send(const char *what, struct loop_pair *c, const char *fmt, uint64_t min_us,
		      const char *wait)
{
	struct ibv_wc wc;
	struct ibv_sge rs = { (uintptr_t)rbuf, 256, rmr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 9, .sg_list = &rs, .num_sge = 1 }, *rbad;
	uint64_t seen = 0, hits = 0, t0, us;
	int retired, st, found;

	rules_clear();
	rule_add(what, fmt, c->b->qp_num);
	if (ibv_post_recv(c->b, &rw, &rbad))
		die("ibv_post_recv");
	loop_pattern(lbuf, 256, 5);
	memset(rbuf, 0, 256);
	t0 = now_us();
	post_a(c, IBV_WR_SEND, lbuf, 256, lmr, 0, 0, 4);
	st = wait_wc(c->cqa, &wc);
	us = now_us() - t0;
	ok(st == IBV_WC_SUCCESS, "%s: the SEND completes (%d)", what, st);
	ok(us >= min_us, "%s: not before %s (%" PRIu64 " us)", what, wait, us);
	st = wait_wc(c->cqb, &wc);
	ok(st == IBV_WC_SUCCESS && wc.byte_len == 256 && !memcmp(lbuf, rbuf, 256),
	   "%s: received once, data right (%d)", what, st);
	ok(ibv_poll_cq(c->cqb, 1, &wc) == 0, "%s: nothing else received", what);
	found = !rule_counts(1, &seen, &hits, &retired);
	ok(found && hits == 1 && retired, "%s: the rule hit once and retired (hits %" PRIu64 ")",
	   what, hits);
}

/* A SEND answered once with an RNR NAK of timer 24 (40.96 ms): the sender sends it again
 * no sooner than that, and it completes. */
static void nak_rnr(void)
{
	struct loop_pair c;

	loop_pair_new(&c, 0);
	held_send("rnr", &c, "qp=%#x dir=rx op=send action=nak:rnr:24 count=1", 40960,
		  "the RNR NAK's encoded 40.96 ms");
	loop_pair_free(&c);
}

/* A 4-packet WRITE whose 2nd packet the responder takes after the 3rd: the 3rd is out of
 * sequence (a sequence NAK), the 2nd then in sequence, the rest sent again; the WRITE
 * completes with the data right. A local ACK timeout of 67 ms: the NAK, not a timeout,
 * brings the retransmission. */
static void reorder_write(void)
{
	struct loop_pair c;
	uint64_t seen = 0, hits = 0;
	int retired, st, found;

	loop_pair_new_opts(&c, 0, 14, 2, 2);
	rules_clear();
	rule_add("reorder", "qp=%#x dir=rx op=write nth=2 action=reorder:1 count=1", c.b->qp_num);
	loop_pattern(lbuf, BIG, 11);
	memset(rbuf, 0, BIG);
	st = loop_post_a(&c, IBV_WR_RDMA_WRITE, (uintptr_t)lbuf, BIG, lmr->lkey, (uintptr_t)rbuf,
			 rmr->rkey);
	ok(st == IBV_WC_SUCCESS && !memcmp(lbuf, rbuf, BIG),
	   "reorder: a 4 KiB WRITE with its 2nd packet taken after the 3rd lands, data right (%d)",
	   st);
	found = !rule_counts(1, &seen, &hits, &retired);
	ok(found && hits == 1 && retired,
	   "reorder: the rule hit once and retired (hits %" PRIu64 ")", hits);
	ok(qp_state(c.a) == IBV_QPS_RTS && qp_state(c.b) == IBV_QPS_RTS,
	   "reorder: both QPs still in RTS");
	loop_pair_free(&c);
}

/* A SEND held 30 ms by the responder: it arrives once with its data, and the sender's
 * completion comes no sooner (its ACK timeout is 67 ms: no retransmission races it). */
static void delay_send(void)
{
	struct loop_pair c;

	loop_pair_new_opts(&c, 0, 14, 2, 2);
	held_send("delay", &c, "qp=%#x dir=rx op=send action=delay:30000 count=1", 30000,
		  "the 30 ms it was held");
	loop_pair_free(&c);
}

int main(int argc, char **argv)
{
	loop_open(argc, argv);
	snprintf(faults_path, sizeof(faults_path), "/sys/kernel/debug/rrxe/%s/faults",
		 ibv_get_device_name(ctx->device));
	lbuf = aligned_alloc(4096, BIG);
	rbuf = aligned_alloc(4096, BIG);
	if (!lbuf || !rbuf)
		die("alloc");
	lmr = ibv_reg_mr(pd, lbuf, BIG, IBV_ACCESS_LOCAL_WRITE);
	rmr = ibv_reg_mr(pd, rbuf, BIG, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			 IBV_ACCESS_REMOTE_WRITE);
	if (!lmr || !rmr)
		die("ibv_reg_mr");
	read_resp_dropped();
	retry_exceeded();
	same_seed();
	nak_access();
	nak_rnr();
	reorder_write();
	delay_send();
	rules_clear();
	return tap_end();
}
