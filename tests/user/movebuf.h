/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The interface of the test dma-buf exporter tests/movebuf/rrxe_movebuf.ko (/dev/rrxe_movebuf),
 * shared by the module and the user programs that drive it (tests/user/dmabuf_move.c).
 */
#ifndef RRXE_MOVEBUF_H
#define RRXE_MOVEBUF_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* movebuf_create.flags */
#define MOVEBUF_NO_PIN 1u /* its pin op refuses (-EOPNOTSUPP): a buffer that cannot be pinned */
#define MOVEBUF_FAIL_VMAP 2u /* its vmap op fails (-ENOMEM) */

/* MOVEBUF_CREATE: a new buffer of size bytes (a multiple of the page size, at most 1 MiB). */
struct movebuf_create {
	__u64 size;
	__u32 flags;
	__s32 fd; /* out: the dma-buf's fd (O_CLOEXEC) */
};

/* MOVEBUF_READ / MOVEBUF_FILL: bytes [off, off + len) of the buffer's current backing. */
struct movebuf_io {
	__s32 fd;
	__u32 len;
	__u64 off;
	__u64 addr; /* READ: user buffer of len bytes; FILL: the byte value to fill with */
};

/* MOVEBUF_STATE: what the exporter sees of a buffer. */
struct movebuf_state {
	__s32 fd;
	__u32 pins; /* pins held now (pin minus unpin calls) */
	__u32 vmaps; /* vmap minus vunmap calls */
	__u32 attachments; /* attach minus detach calls */
	__u32 moves; /* moves done */
	__u32 retired; /* backings retired by moves (kept, poisoned, until the buffer goes) */
	__u64 retired_touched; /* bytes of retired backings no longer holding the poison */
};

#define MOVEBUF_CREATE _IOWR('M', 0x40, struct movebuf_create)
/* Moves the buffer (arg: its fd) to new pages: EBUSY while it is pinned. */
#define MOVEBUF_MOVE _IO('M', 0x41)
#define MOVEBUF_READ _IOW('M', 0x42, struct movebuf_io)
#define MOVEBUF_FILL _IOW('M', 0x43, struct movebuf_io)
#define MOVEBUF_STATE _IOWR('M', 0x44, struct movebuf_state)

#endif
