/* SPDX-License-Identifier: GPL-2.0 */
/* The cgroup v2 group an accounting test runs in: its directory and writes to its files. */
#ifndef RRXE_TEST_CGROUP_H
#define RRXE_TEST_CGROUP_H

#include <stdio.h>

/* The group's directory (the test sets it from its arguments). */
static const char *cg;

/* Writes S to the group's FILE (memory.max, rdma.max, ...); 0, or -1 on any failure. */
static int cg_write(const char *file, const char *s)
{
	char p[256];
	FILE *f;
	int r;

	snprintf(p, sizeof(p), "%s/%s", cg, file);
	f = fopen(p, "w");
	if (!f)
		return -1;
	r = fputs(s, f) < 0;
	return fclose(f) || r ? -1 : 0;
}

#endif
