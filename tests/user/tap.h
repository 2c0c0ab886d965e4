/* SPDX-License-Identifier: GPL-2.0 */
/* TAP output for the single-process test programs: ok(), die(), tap_end(). */
#ifndef RRXE_TEST_TAP_H
#define RRXE_TEST_TAP_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_n, tap_fail;

static void ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ok(int cond, const char *fmt, ...)
{
	va_list ap;

	tap_n++;
	tap_fail += !cond;
	printf("%sok %d - ", cond ? "" : "not ", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static void die(const char *what)
{
	printf("Bail out! %s (%s)\n", what, strerror(errno));
	exit(1);
}

/* The plan line; the exit status of the program. */
static int tap_end(void)
{
	printf("1..%d\n", tap_n);
	return tap_fail ? 1 : 0;
}

#endif
