// SPDX-License-Identifier: GPL-2.0
/* MODULE_IMPORT_NS takes a bare identifier (6.13 and later take a string literal). */
#include <linux/module.h>
MODULE_IMPORT_NS(DMA_BUF);
