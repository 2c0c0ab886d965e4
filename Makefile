# Builds rrxe.ko out of tree (the real rules are in Kbuild) and the provider.
#   make                      module against the cached rrxe kernel (scripts/setup.sh builds it)
#   make KDIR=/path/to/tree   module against your own CONFIG_RUST=y kernel tree
#   make provider             librrxe-rdmav34.so into build/provider/
KDIR ?= $(shell bash -c '. scripts/env.sh; echo $$KDIR')
LLVM ?= -19
RUSTC ?= /usr/bin/rustc
BINDGEN ?= $(shell command -v bindgen 2>/dev/null || echo $(HOME)/.cargo/bin/bindgen)
export LIBCLANG_PATH ?= /usr/lib/llvm-19/lib
KMAKE = $(MAKE) -C $(KDIR) M=$(CURDIR) LLVM=$(LLVM) RUSTC=$(RUSTC) BINDGEN=$(BINDGEN)

all: modules

# Kbuild does not notice a new KDIR (another cached kernel after a config change): objects
# and bindgen output from the old tree would be linked against the new one, with the old
# struct layouts. A stamp of the KDIR used cleans first when it changes.
modules:
	@if [ -f .kdir ] && [ "$$(cat .kdir)" != "$(KDIR)" ]; then $(KMAKE) clean >/dev/null; fi
	@echo "$(KDIR)" > .kdir
	$(KMAKE) modules

clean:
	$(KMAKE) clean
	rm -rf build .kdir

provider:
	bash provider/install.sh --libdir $(CURDIR)/build/provider --confdir $(CURDIR)/build/provider

.PHONY: all modules clean provider
