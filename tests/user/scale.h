/* SPDX-License-Identifier: GPL-2.0 */
/* How much slower this kernel is than the CI one: RRXE_TIMEOUT_SCALE (scripts/kasan-suite.sh
 * sets 4 for a KASAN guest; run-vms passes it into the guest). Waits in the test programs
 * multiply their bounds by it, so a slower kernel does not turn into a false failure. */
#ifndef RRXE_TEST_SCALE_H
#define RRXE_TEST_SCALE_H

#include <stdlib.h>

static inline int test_scale(void)
{
	const char *s = getenv("RRXE_TIMEOUT_SCALE");
	int v = s ? atoi(s) : 1;

	return v >= 1 && v <= 100 ? v : 1;
}

#endif
