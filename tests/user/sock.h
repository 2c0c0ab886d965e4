/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The TCP side channel of the two-host test programs: one connection (sock), xfer() of a
 * fixed-size message each way. Include after tap.h.
 */
#ifndef RRXE_TEST_SOCK_H
#define RRXE_TEST_SOCK_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "scale.h"

static int sock;

static inline void xfer(void *p, size_t n, int send_it)
{
	uint8_t *b = p;

	while (n) {
		ssize_t r = send_it ? write(sock, b, n) : read(sock, b, n);

		if (r <= 0)
			die("tcp exchange");
		b += r;
		n -= r;
	}
}

/* The connection: the server (host NULL) listens on port, the client retries for 60 s
 * (times test_scale()). */
static inline int tcp_connect(const char *host, int port, int server)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (s < 0)
		die("socket");
	if (server) {
		int l = s, c;

		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		a.sin_addr.s_addr = INADDR_ANY;
		if (bind(l, (void *)&a, sizeof(a)) || listen(l, 1))
			die("listen");
		c = accept(l, NULL, NULL);
		close(l);
		return c;
	}
	if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
		die("address");
	for (int i = 0, n = 300 * test_scale(); i < n; i++) {
		if (!connect(s, (void *)&a, sizeof(a)))
			return s;
		usleep(200000);
	}
	die("connect");
	return -1;
}

#endif
