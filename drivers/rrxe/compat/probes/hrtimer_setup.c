// SPDX-License-Identifier: GPL-2.0
/* hrtimer_setup (hrtimer_init's successor: the callback set with the timer). */
#include <linux/hrtimer.h>
static enum hrtimer_restart f(struct hrtimer *t) { return HRTIMER_NORESTART; }
void p(struct hrtimer *t) { hrtimer_setup(t, f, CLOCK_MONOTONIC, HRTIMER_MODE_REL_SOFT); }
