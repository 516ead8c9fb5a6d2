# Kylix: the C library, the launcher, the examples, the tests.
#
#   make            build/libkylix.so + build/include/kylix.h, build/kylixrun, build/kylix
#   make examples   build/examples/<name> for every examples/c/<name>.c
#   make demo       PageRank over the bundled power-law graph on 4 local ranks
#   make test       go vet, every Go test (incl. the multi-process C tests in tests/ and the
#                   mpirun/ssh launcher tests), a short fuzz run of the frame decoder, then the
#                   Python (pytest) and Java (JUnit) binding tests
#   make clean
#
# Go's build cache decides what to rebuild, so the Go targets always run `go build`.

GO    ?= go
ifeq ($(origin CC),default)
CC    := gcc
endif
BUILD := build
LIB   := $(BUILD)/libkylix.so

# Export only the kylix_* names (capi/kylix.map): no Go runtime or cgo symbols leak out.
SO_LDFLAGS := -extldflags "-Wl,--version-script=$(CURDIR)/capi/kylix.map -Wl,-soname,libkylix.so"

EXAMPLE_SRCS := $(wildcard examples/c/*.c)
EXAMPLES     := $(patsubst examples/c/%.c,$(BUILD)/examples/%,$(EXAMPLE_SRCS))
KYLIX_TOOL   := $(if $(wildcard cmd/kylix/*.go),$(BUILD)/kylix)

.PHONY: all examples demo test clean check-tools FORCE

all: $(LIB) $(BUILD)/include/kylix.h $(BUILD)/kylixrun $(KYLIX_TOOL)

check-tools:
	@command -v $(GO) >/dev/null 2>&1 || { \
	  echo "make: the Go toolchain ('$(GO)') is not on PATH: install Go 1.26 or newer (https://go.dev/dl/)" >&2; \
	  exit 1; }
	@command -v $(CC) >/dev/null 2>&1 || { \
	  if [ "$(CC)" = gcc ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "make: no C compiler ('$(CC)'): installing gcc with apt-get" >&2; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc >/dev/null || exit 1; \
	  else \
	    echo "make: no C compiler ('$(CC)'): cgo needs one; install gcc (apt-get install gcc)" >&2; \
	    exit 1; \
	  fi; }
	@command -v nm >/dev/null 2>&1 || { echo "make: nm not found: install binutils" >&2; exit 1; }

$(BUILD) $(BUILD)/include $(BUILD)/examples:
	@mkdir -p $@

# go build relinks a c-shared library every time; the build is reproducible, so the file is
# replaced only when it changed and the examples are not relinked for nothing. cgo also writes a
# header of the internal kylixgo_* exports: dropped, so nobody includes it for include/kylix.h.
$(LIB): FORCE | check-tools $(BUILD)
	CGO_ENABLED=1 CC=$(CC) $(GO) build -buildmode=c-shared -ldflags '$(SO_LDFLAGS)' -o $@.new ./capi
	@rm -f $@.h $(BUILD)/libkylix.new.h
	@capi/check-symbols.sh $@.new include/kylix.h
	@if cmp -s $@.new $@; then rm -f $@.new; else mv -f $@.new $@; fi

$(BUILD)/include/kylix.h: include/kylix.h | check-tools $(BUILD)/include
	$(CC) -fsyntax-only -std=c99 -Wall -Wextra -Werror -x c $<
	@if command -v g++ >/dev/null 2>&1; then g++ -fsyntax-only -Wall -Wextra -Werror -x c++ $<; fi
	cp $< $@

$(BUILD)/kylixrun: FORCE | check-tools $(BUILD)
	$(GO) build -o $@ ./cmd/kylixrun

$(BUILD)/kylix: FORCE | check-tools $(BUILD)
	$(GO) build -o $@ ./cmd/kylix

examples: $(EXAMPLES)

$(BUILD)/examples/%: examples/c/%.c $(wildcard examples/c/*.h) include/kylix.h $(LIB) | $(BUILD)/examples
	$(CC) -O2 -Wall -Iinclude -o $@ $< -L$(BUILD) -lkylix -Wl,-rpath,'$$ORIGIN/..' -lm

$(BUILD)/graph.el: examples/data/powerlaw_graph.el.gz | $(BUILD)
	gunzip -kc $< > $@.tmp && mv $@.tmp $@

demo: all examples $(BUILD)/graph.el
	$(BUILD)/kylixrun -n 4 $(BUILD)/examples/pagerank $(BUILD)/graph.el

# The launcher tests need openmpi-bin, openssh-server and iproute2; as root they are installed
# up front (apt-get) so package downloads stay out of go test's time limit.
test: all examples
	@if [ "$$(id -u)" = 0 ]; then sh tests/netns/deps.sh all; fi
	$(GO) vet ./...
	KYLIX_BUILD=$(CURDIR)/$(BUILD) $(GO) test -count=1 -timeout 20m ./...
	$(GO) test -run '^$$' -fuzz FuzzDecodeHeader -fuzztime 10s ./netio
	KYLIX_BUILD=$(CURDIR)/$(BUILD) bash bindings/python/run_tests.sh
	@if [ -x bindings/java/run_tests.sh ] || [ -f bindings/java/run_tests.sh ]; then \
	  KYLIX_BUILD=$(CURDIR)/$(BUILD) bash bindings/java/run_tests.sh; fi

clean:
	rm -rf $(BUILD)

FORCE:
