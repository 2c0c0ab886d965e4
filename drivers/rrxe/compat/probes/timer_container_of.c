// SPDX-License-Identifier: GPL-2.0
/* timer_container_of (from_timer's successor). */
#include <linux/timer.h>
struct s { struct timer_list t; };
struct s *p(struct timer_list *t) { struct s *x = timer_container_of(x, t, t); return x; }
