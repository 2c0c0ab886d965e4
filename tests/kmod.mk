# SPDX-License-Identifier: GPL-2.0
# A test kernel module's build against the cached rrxe kernel tree (KDIR from
# scripts/env.sh, so RRXE_KERNEL and RRXE_CC pick the kernel), included by the Makefile of
# each test module directory (tests/kverbs, tests/movebuf) after it sets HERE to its own
# directory. Equivalent to: . scripts/env.sh; make -C $KDIR M=$HERE LLVM=-19 modules
# (LLVM=-19 only for a clang-built tree, as in the top-level Makefile).
KDIR ?= $(shell bash -c '. $(HERE)/../../scripts/env.sh >/dev/null 2>&1; echo $$KDIR')
LLVM ?= $(shell grep -q '^CONFIG_CC_IS_CLANG=y' $(KDIR)/.config 2>/dev/null && echo -19)
KMAKE = $(MAKE) -C $(KDIR) M=$(HERE) $(if $(LLVM),LLVM=$(LLVM))

# As the top-level Makefile: objects built against another tree are cleaned first.
all:
	@if [ -f $(HERE)/.kdir ] && [ "$$(cat $(HERE)/.kdir)" != "$(KDIR)" ]; then $(KMAKE) clean >/dev/null; fi
	@echo "$(KDIR)" > $(HERE)/.kdir
	$(KMAKE) modules

clean:
	$(KMAKE) clean
	rm -f $(HERE)/.kdir

.PHONY: all clean
