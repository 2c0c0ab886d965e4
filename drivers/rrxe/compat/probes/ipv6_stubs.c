// SPDX-License-Identifier: GPL-2.0
/* <net/ipv6_stubs.h> and its ipv6_stub table (gone in 7.x: call IPv6 directly). */
#include <net/ipv6_stubs.h>
void *p(void) { return ipv6_stub->ipv6_dev_find; }
