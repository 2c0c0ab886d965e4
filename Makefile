# SPDX-License-Identifier: GPL-2.0
# Builds rrxe.ko out of tree (the real rules are in Kbuild), installs it, and builds the provider.
#   make                       the module against the cached rrxe kernel (scripts/build-kernel.sh)
#   make KDIR=/path/to/tree    the module against your own CONFIG_RUST=y kernel's build tree
#   make modules_install       into /lib/modules/<release>/updates/ (INSTALL_MOD_PATH honoured),
#                              then depmod, so that `modprobe rrxe` works
#   make provider              the libibverbs provider into build/provider/
#   make help                  this text
# RUSTC must be the rustc the kernel was built with (scripts/check-kdir.sh says which);
# LLVM=-19 is passed when the tree was built with clang (LLVM= for a gcc-built tree).
KDIR ?= $(shell bash -c '. scripts/env.sh; echo $$KDIR')
LLVM ?= $(shell grep -q '^CONFIG_CC_IS_CLANG=y' $(KDIR)/.config 2>/dev/null && echo -19)
RUSTC ?= /usr/bin/rustc
BINDGEN ?= $(shell command -v bindgen 2>/dev/null || echo $(HOME)/.cargo/bin/bindgen)
export LIBCLANG_PATH ?= /usr/lib/llvm-19/lib
# With LLVM=-NN the compiler and linker are named here too: DKMS passes CC=clang and
# LD=ld.lld for a clang-built kernel, which a machine with only versioned LLVM lacks.
LLVM_SUFFIX = $(if $(filter -%,$(LLVM)),$(LLVM))
KMAKE = $(MAKE) -C $(KDIR) M=$(CURDIR) RUSTC=$(RUSTC) BINDGEN=$(BINDGEN) \
	$(if $(LLVM),LLVM=$(LLVM) CC=clang$(LLVM_SUFFIX) LD=ld.lld$(LLVM_SUFFIX))

all: modules

help:
	@sed -n '3,10s/^# \{0,1\}//p' Makefile

check-kdir:
	@bash scripts/check-kdir.sh "$(KDIR)" "$(RUSTC)"

# Kbuild does not notice a new KDIR (another cached kernel after a config change): objects
# and bindgen output from the old tree would be linked against the new one, with the old
# struct layouts. A stamp of the KDIR used cleans first when it changes: the tree's real path,
# so that /lib/modules/<release>/build, a link to the tree just built, is the same tree.
modules: check-kdir
	@if [ -f .kdir ] && [ "$$(cat .kdir)" != "$$(realpath $(KDIR))" ]; then $(KMAKE) clean >/dev/null; fi
	@realpath $(KDIR) > .kdir
	$(KMAKE) modules

# Kbuild installs into $(INSTALL_MOD_PATH)/lib/modules/<release>/updates and runs depmod
# there (updates/ takes precedence over the kernel's own modules, as distributions expect).
# It installs what `make` built, as the kernel's own modules_install does.
modules_install: check-kdir
	$(KMAKE) INSTALL_MOD_DIR=updates modules_install

clean:
	$(KMAKE) clean
	rm -rf build .kdir

provider:
	bash provider/install.sh --libdir $(CURDIR)/build/provider --confdir $(CURDIR)/build/provider

.PHONY: all help check-kdir modules modules_install clean provider
