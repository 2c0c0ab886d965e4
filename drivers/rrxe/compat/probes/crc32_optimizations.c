// SPDX-License-Identifier: GPL-2.0
/* The CRC library says whether crc32_le uses an architecture's code (crc32_optimizations). */
#include <linux/bits.h>
#include <linux/crc32.h>
u32 p(void) { return crc32_optimizations() & CRC32_LE_OPTIMIZATION; }
