# Kylix: the C library, the launcher, the examples, the tests.
#
#   make            build/libkylix.so + build/include/kylix.h, build/kylixrun, build/kylix
#   make examples   build/examples/<name> for every examples/c/<name>.c
#   make demo       PageRank over the bundled power-law graph on 4 local ranks
#   make test       installs what is missing (saying what first: README "Two commands"), then
#                   go vet, every Go test (incl. the multi-process C tests in tests/ and the
#                   mpirun/ssh launcher tests), short fuzz runs of the frame, index-list and
#                   layer-0 message decoders, the Python (pytest) and Java (JUnit) binding tests,
#                   and tests/userpaths: the README examples verbatim, make install + pkg-config,
#                   the Python wheel, mpi4py under Open MPI, PySpark and spark-submit barrier
#                   stages; per-suite counts as they finish, one total line at the end
#   make wheel      build/dist/kylix-*-manylinux_*.whl: the Python package, installable without Go
#   make install PREFIX=/usr/local   lib/libkylix.so (stripped), lib/pkgconfig/kylix.pc,
#                   include/kylix.h, bin/kylixrun, bin/kylix (DESTDIR= for staged installs)
#   make uninstall PREFIX=/usr/local
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

.PHONY: all examples demo test clean check-tools install uninstall wheel FORCE

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

# tests/make_test.sh first says what it installs (tests/deps.sh), then runs go vet, every Go
# test, the short fuzz runs, the Python and Java binding tests and tests/userpaths in two lanes,
# printing each package's and suite's counts, and ends with `N passed, N failed, N skipped`.
test: all examples
	KYLIX_BUILD=$(CURDIR)/$(BUILD) GO=$(GO) bash tests/make_test.sh

# auditwheel (in build/wheel-venv, installed by the script) checks and retags the wheel.
wheel: all
	KYLIX_BUILD=$(CURDIR)/$(BUILD) bash bindings/python/build_wheel.sh

# ---- install ---------------------------------------------------------------------------------
PREFIX  ?= /usr/local
DESTDIR ?=
VERSION := $(shell awk '/^\#define KYLIX_VERSION_(MAJOR|MINOR|PATCH) /{v=v s $$3; s="."} END{print v}' include/kylix.h)
INSTALLED := lib/libkylix.so lib/pkgconfig/kylix.pc include/kylix.h bin/kylixrun bin/kylix

# The installed library and tools are stripped (build/ keeps the symbols for debugging). kylix.pc
# carries an rpath, so a program linked with `pkg-config --libs kylix` finds the library in any
# PREFIX without LD_LIBRARY_PATH or ldconfig.
install: all
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/bin
	install -m 755 -s $(LIB) $(DESTDIR)$(PREFIX)/lib/libkylix.so
	install -m 644 include/kylix.h $(DESTDIR)$(PREFIX)/include/kylix.h
	install -m 755 -s $(BUILD)/kylixrun $(BUILD)/kylix $(DESTDIR)$(PREFIX)/bin/
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$${prefix}/lib' 'includedir=$${prefix}/include' '' \
	  'Name: kylix' 'Description: Sparse allreduce over a nested, heterogeneous-degree butterfly' \
	  'Version: $(VERSION)' 'Libs: -L$${libdir} -Wl,-rpath,$${libdir} -lkylix' \
	  'Cflags: -I$${includedir}' > $(DESTDIR)$(PREFIX)/lib/pkgconfig/kylix.pc
	@echo "installed kylix $(VERSION) in $(DESTDIR)$(PREFIX): pkg-config finds it with PKG_CONFIG_PATH=$(PREFIX)/lib/pkgconfig"

uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/,$(INSTALLED))

clean:
	rm -rf $(BUILD)

FORCE:
