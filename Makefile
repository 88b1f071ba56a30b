# SPDX-License-Identifier: Apache-2.0
# sluice — GNU make, pkg-config.  `make help` lists the targets.

PKGS      := rdkafka libuv libprotobuf-c inih libmicrohttpd jansson gnutls
DEB_PKGS  := gcc make pkg-config librdkafka-dev libuv1-dev libprotobuf-c-dev \
             protobuf-c-compiler libcmocka-dev libinih-dev libmicrohttpd-dev \
             libjansson-dev libgnutls28-dev kcat clang-format maven default-jre-headless procps \
             python3 python3-venv curl clang libclang-rt-dev mmdebstrap python3-yaml \
             libjemalloc-dev iproute2 iptables libicu-dev
CC        ?= gcc
BUILD     ?= build
CFLAGS    ?= -O2 -g
override CFLAGS += -std=gnu11 -Wall -Wextra -Werror -Wno-missing-field-initializers \
             -D_GNU_SOURCE -Isrc -I$(BUILD)/gen $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS    += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm -lpthread
# ICU's calendar (time zones and DST) for src/schedule.c: its headers for
# every object, its libraries only for what links schedule.o (ICU_USERS).
ICU_CFLAGS := $(shell pkg-config --cflags icu-i18n 2>/dev/null)
ICU_LIBS   := $(shell pkg-config --libs icu-i18n 2>/dev/null)
override CFLAGS += $(ICU_CFLAGS)
# ./sluice's malloc: jemalloc (every thread's, librdkafka's too: it comes
# first among the libraries), or MALLOC=libc.  The sanitizer build, the
# unit tests, the tools and the benchmarks' copy keep libc's (util.h).
MALLOC    ?= jemalloc
MALLOC_LIBS := $(if $(filter jemalloc,$(MALLOC)),-ljemalloc)
# The version: SL_VERSION in src/cli.h names it, nowhere else.
VERSION   := $(shell sed -n 's/^.define SL_VERSION "\(.*\)"$$/\1/p' src/cli.h)
DIST_DIR  ?= .

SRCS      := $(wildcard src/*.c)
PROTOS    := $(wildcard proto/*.proto)
GEN_C     := $(patsubst proto/%.proto,$(BUILD)/gen/%.pb-c.c,$(PROTOS))
GEN_H     := $(GEN_C:.c=.h)
OBJS      := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(SRCS)) $(GEN_C:$(BUILD)/gen/%.c=$(BUILD)/obj/%.o)
LIB_OBJS  := $(filter-out $(BUILD)/obj/main.o,$(OBJS))
# The delay operator's recurring timers (delay_recurring.c) use
# schedule.c, so ./sluice and whatever links op_delay.o need ICU's
# libraries (libicu72 in docker/runtime-packages.txt).
SLUICE_OBJS := $(OBJS)
LDLIBS    += $(ICU_LIBS)
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
BENCH_SRCS:= $(wildcard bench/*.c)
BENCH_BINS:= $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))
TOOL_SRCS := $(wildcard tests/tools/*.c)
TOOL_BINS := $(patsubst tests/tools/%.c,$(BUILD)/tools/%,$(TOOL_SRCS))
# The sanitizer build: ASan + UBSan, and undefined behaviour is fatal (a
# report that scrolls past in a log is not a failure anyone sees).
ASAN_CFLAGS := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined \
             -fno-omit-frame-pointer -Wno-format-truncation
ASAN_UNIT_BINS := $(patsubst tests/unit/%.c,build-asan/tests/%,$(UNIT_SRCS))

.PHONY: all deps asan unit-asan test unit integration demo bench format format-check check-layers \
        docs docs-check clean help test-cluster broker-start broker-stop ops-tools ops-check ops-rules \
        image image-check check-spdx dist dist-check build-trixie
all: sluice ## build ./sluice (what plain `make` does)

help: ## this list (from the "## " comments on the rules)
	@awk -f tools/make-help.awk $(filter-out %.d,$(MAKEFILE_LIST))

deps: ## install missing Debian packages (apt-get)
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$missing"; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

$(BUILD)/gen/%.pb-c.c $(BUILD)/gen/%.pb-c.h: proto/%.proto
	@mkdir -p $(BUILD)/gen
	protoc-c --proto_path=proto --c_out=$(BUILD)/gen $<

$(BUILD)/obj/%.pb-c.o: $(BUILD)/gen/%.pb-c.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/obj/%.o: src/%.c $(GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

# Keep the generated protobuf-c sources between builds.
.SECONDARY: $(GEN_C) $(GEN_H)

# The commit this build is of, for `sluice version`: SLUICE_COMMIT when
# set (make or environment variable: the image's build stage gets it as a
# build argument, docker/Dockerfile), else a tarball's COMMIT file (make
# dist), else git's HEAD when this folder is the top of a checkout
# ("-dirty" when tracked files differ from it), else "unknown".  Rewritten
# only when it changes, so only main.o is rebuilt when HEAD moves.
export SLUICE_COMMIT
$(BUILD)/gen/buildinfo.h: FORCE
	@mkdir -p $(dir $@)
	@if [ -n "$$SLUICE_COMMIT" ]; then c=$$(printf '%s' "$$SLUICE_COMMIT" | head -c 64 | tr -cd '0-9A-Za-z.-'); \
	elif [ -f COMMIT ]; then c=$$(head -c 64 COMMIT | tr -cd '0-9A-Za-z.-'); \
	elif p=$$(git rev-parse --show-prefix 2>/dev/null) && [ -z "$$p" ] && \
	  c=$$(git rev-parse --short=12 HEAD 2>/dev/null); then \
	  [ -z "$$(git --no-optional-locks status --porcelain -uno 2>/dev/null)" ] || c=$$c-dirty; \
	fi; \
	printf '/* Written by make: the commit of this build. */\n#define SL_COMMIT "%s"\n' \
	  "$${c:-unknown}" >$@.tmp; \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv -f $@.tmp $@; fi

$(BUILD)/obj/main.o: $(BUILD)/gen/buildinfo.h

FORCE:

$(BUILD)/sluice: $(SLUICE_OBJS)
	@[ -z "$(MALLOC_LIBS)" ] || pkg-config --exists jemalloc || { \
	  echo "jemalloc is missing: make deps (libjemalloc-dev), or make MALLOC=libc" >&2; exit 1; }
	$(CC) $(CFLAGS) -o $@ $^ $(MALLOC_LIBS) $(LDLIBS)

# Replaced by rename, so a running ./sluice does not block the build.
sluice: $(BUILD)/sluice ## build ./sluice (MALLOC=libc: without jemalloc)
	cp $< $@.tmp && mv -f $@.tmp $@

# Tests and benchmarks link against the archive, so each pulls in only the
# modules it uses.
$(BUILD)/libsluice.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -o $@ $< $(BUILD)/libsluice.a $(LDLIBS) $(shell pkg-config --libs cmocka)

$(BUILD)/bench/%: bench/%.c $(BUILD)/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -o $@ $< $(BUILD)/libsluice.a $(LDLIBS)

# Test tools the integration tests drive (tests/tools/*.c).
.PHONY: tools
tools: $(TOOL_BINS) ## the test tools the integration tests drive (build/tools/)

$(BUILD)/tools/%: tests/tools/%.c $(BUILD)/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -o $@ $< $(BUILD)/libsluice.a $(LDLIBS)

asan: ## ASan + UBSan build: ./sluice-asan and the unit tests
	$(MAKE) BUILD=build-asan CFLAGS="$(ASAN_CFLAGS)" MALLOC=libc build-asan/sluice $(ASAN_UNIT_BINS)
	cp build-asan/sluice sluice-asan

unit: $(UNIT_BINS) ## the cmocka unit tests (no broker)
	@tests/run-unit.sh $(UNIT_BINS)

unit-asan: asan ## the unit tests under ASan + UBSan
	@tests/run-unit.sh $(ASAN_UNIT_BINS)

# The full suite: what CI runs.  Ends with "N passed, N failed" (and ", N
# skipped" when a test cannot run on this machine: tests/integration/run.sh).  The unit
# tests run under ASan + UBSan; so do the integration tests marked
# "# variant: asan" (the kill -9 tests), a second time against ./sluice-asan.
test: deps ## the whole suite, as CI runs it (deps, build, unit, fuzz smoke, integration)
	@python3 tools/check-layers.py src || { echo "0 passed, 1 failed"; exit 1; }
	@tools/check-spdx.sh || { echo "0 passed, 1 failed"; exit 1; }
	@$(MAKE) --no-print-directory -j2 sluice $(TOOL_BINS) ops-tools
	@$(MAKE) --no-print-directory docs-check || { echo "0 passed, 1 failed"; exit 1; }
	@$(MAKE) --no-print-directory -j2 asan >/dev/null
	@$(MAKE) --no-print-directory -j2 fuzz-build >/dev/null
	@tests/run-all.sh $(ASAN_UNIT_BINS)

integration: sluice asan $(TOOL_BINS) ## the integration tests (starts and stops the test brokers)
	@tests/integration/run.sh

# The container image, proven without a Docker engine (needs root): the
# integration tests named *-image-* (0021 runs the image as PID 1 in a PID
# namespace, 0022 reads compose.yaml, 0023 the Dockerfile), with the test
# broker started and stopped around them.  make test runs them too.
# The image with Docker: the build context has no .git, so the commit this
# checkout's build would name (buildinfo.h, above) goes in as a build arg.
IMAGE ?= sluice:dev
image: $(BUILD)/gen/buildinfo.h ## docker build of docker/Dockerfile as sluice:dev (IMAGE=...), with the commit (needs Docker)
	docker build --build-arg SLUICE_COMMIT=$$(sed -n 's/^#define SL_COMMIT "\(.*\)"/\1/p' $<) \
	  -f docker/Dockerfile -t $(IMAGE) .

image-check: deps sluice ## the container image without Docker (tests 0021-0023; root)
	@tests/integration/run.sh -image-

# The build on Debian 13: tools/build-debian.sh makes a trixie root with
# mmdebstrap (cached under build/debian), and there, in a mount namespace of
# its own, builds the working tree's tracked files and runs the unit tests
# (test 0052 does the same in make test).
build-trixie: ## make sluice and make unit in a Debian 13 (trixie) root (mmdebstrap; root)
	@tools/build-debian.sh trixie

# The cluster fault tests alone (07NN-cluster-*: three nodes in network
# namespaces, needs root); make test runs them too.
test-cluster: deps sluice $(TOOL_BINS) ## the cluster fault tests alone (07NN: network namespaces; root)
	@tests/integration/run.sh -cluster-

broker-start: ## start the local test broker (127.0.0.1:39092)
	@tests/integration/kafka/broker.sh start
broker-stop: ## stop the local test broker
	@tests/integration/kafka/broker.sh stop

demo: deps sluice ## local broker, the pipelines of examples/demo.ini, sample input
	@examples/demo.sh

bench: deps sluice $(BENCH_BINS) ## the benchmarks against a local broker (bench/run.sh)
	@bench/run.sh

# The documentation's generated sections: the configuration reference, and
# the ACL example (Security) from examples/acls.ini, without the caller's
# SLUICE_* environment (env -i), so every run writes the same text.
# docs-check (part of make test) also checks every Markdown link and anchor.
DOCS_GEN = ./sluice config reference > $(BUILD)/config-reference.md && \
	{ echo '```sh' && env -i ./sluice acls -c examples/acls.ini && echo '```'; } > $(BUILD)/acls.md

docs: sluice ## regenerate docs/configuration.md and the ACL example in docs/security.md
	@$(DOCS_GEN)
	@tools/replace-section.sh docs/configuration.md CONFIG-REFERENCE $(BUILD)/config-reference.md
	@tools/replace-section.sh docs/security.md ACLS $(BUILD)/acls.md

docs-check: sluice ## fail when those generated sections are stale or a Markdown link or #anchor is broken
	@$(DOCS_GEN)
	@tools/replace-section.sh --check docs/configuration.md CONFIG-REFERENCE $(BUILD)/config-reference.md
	@tools/replace-section.sh --check docs/security.md ACLS $(BUILD)/acls.md
	@python3 tools/check-links.py

format: ## clang-format the C sources in place
	clang-format -i src/*.c src/*.h tests/unit/*.c bench/*.c tests/tools/*.c $(FUZZ_SRCS) 2>/dev/null || true

check-layers: ## the include layers of src/ (tools/check-layers.py)
	@python3 tools/check-layers.py src

check-spdx: ## the SPDX licence line atop every source file (tools/check-spdx.sh)
	@tools/check-spdx.sh

format-check: ## fail when clang-format would change a C source
	@clang-format --dry-run --Werror src/*.c src/*.h tests/unit/*.c $(wildcard bench/*.c) $(TOOL_SRCS) $(FUZZ_SRCS) && echo "format-check: ok"

# The ops/ checks (tests/integration/0031-ops-manifests.sh, 0032-ops-metrics.sh):
# a venv with the pinned Python tools, kustomize built from its Go module
# (skipped, with a note, where there is no Go toolchain), and promtool for
# `promtool check rules`.  All cached in build/; the venv is rebuilt when
# the requirements change.
OPS_VENV    := build/ops-venv
# Where docs/runbooks.md of your copy of this repository is served: each
# alert's runbook_url is RUNBOOK_URL#<alert, lower-cased>.  The one setting:
# change it here (or `make ops-rules RUNBOOK_URL=...`), then `make ops-rules`
# writes it into ops/prometheus/alerts.yaml and the PrometheusRule; the ops
# checks fail while the rule files are not in step with it.
RUNBOOK_URL ?= https://git.example.com/sluice/blob/main/docs/runbooks.md
KUSTOMIZE   := build/ops-tools/kustomize
KUSTOMIZE_VERSION := v5.5.0
PROMTOOL    := build/ops-tools/promtool

ops-tools: $(OPS_VENV)/ok $(KUSTOMIZE) $(PROMTOOL) ## the ops checks' venv, kustomize and promtool, cached in build/

# build/NAME-venv: a venv with tests/NAME/requirements.txt (ops, api).
build/%-venv/ok: tests/%/requirements.txt
	@rm -rf $(@D)
	@python3 -m venv $(@D)
	@$(@D)/bin/pip install -q --disable-pip-version-check -r $< >$(@D).log 2>&1 || \
	  { cat $(@D).log; rm -rf $(@D); exit 1; }
	@touch $@

$(KUSTOMIZE):
	@mkdir -p $(dir $@)
	@if command -v go >/dev/null 2>&1; then \
	  GOBIN=$(abspath $(dir $@)) GOFLAGS=-modcacherw go install \
	    sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION) >$@.log 2>&1 || \
	    { tail -5 $@.log; rm -f $@; \
	      echo "ops-tools: go install of kustomize failed: kustomize builds will not be rendered (the hand checks still run)"; }; \
	else echo "ops-tools: no Go toolchain: kustomize builds will not be rendered"; fi

# promtool: taken out of Debian's prometheus package (the distribution's
# build of the version the suite ships), fetched once with apt-get download:
# nothing is installed, no Prometheus server is set up or started.  Where
# there is no apt-get, or it cannot fetch the package, a note; the checks
# then use a promtool on PATH, else the PromQL parser alone.
$(PROMTOOL):
	@mkdir -p $(dir $@)deb
	@if command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1; then \
	  ( cd $(dir $@)deb && rm -f prometheus_*.deb && \
	    { apt-get download prometheus >../promtool.log 2>&1 || \
	      { [ "$$(id -u)" = 0 ] && apt-get update -qq >>../promtool.log 2>&1 && \
	        apt-get download prometheus >>../promtool.log 2>&1; }; } && \
	    dpkg-deb --fsys-tarfile prometheus_*.deb | tar -xO ./usr/bin/promtool >../promtool.tmp && \
	    cd .. && chmod +x promtool.tmp && ./promtool.tmp --version >>promtool.log 2>&1 && \
	    mv promtool.tmp promtool && rm -rf deb ) || \
	  { rm -f $@.tmp; tail -3 $(dir $@)promtool.log; \
	    echo "ops-tools: could not take promtool out of Debian's prometheus package: the rules are not checked with it"; }; \
	else echo "ops-tools: no apt-get: promtool is not fetched (one on PATH is used)"; fi

# --promtool: build/ops-tools' promtool, else one on PATH.
ops-check: sluice ops-tools ## validate the Kubernetes manifests in ops/ offline
	@$(OPS_VENV)/bin/python tests/ops/check_manifests.py --root . --sluice ./sluice \
	  --work $(BUILD)/ops-check --runbook-url '$(RUNBOOK_URL)' \
	  $$([ -x $(KUSTOMIZE) ] && echo --kustomize $(KUSTOMIZE)) \
	  $$(p=$(PROMTOOL); [ -x $$p ] || p=$$(command -v promtool); [ -z "$$p" ] || echo --promtool $$p)

ops-rules: $(OPS_VENV)/ok ## the alerts' runbook_url from RUNBOOK_URL; regenerate prometheusrule.yaml
	@$(OPS_VENV)/bin/python tests/ops/gen-prometheusrule.py ops/prometheus/alerts.yaml \
	  ops/prometheus-operator/prometheusrule.yaml '$(RUNBOOK_URL)'
	@python3 tests/ops/gen-dashboard-configmap.py ops/grafana/sluice.json \
	  ops/grafana/dashboard-configmap.yaml

# The source tarball: the tracked files of HEAD under sluice-VERSION/ and
# COMMIT, HEAD's hash (uncommitted changes are not in it).
dist: ## sluice-VERSION.tar.gz of HEAD with COMMIT; builds with no git (DIST_DIR=...)
	@p=$$(git rev-parse --show-prefix 2>/dev/null) && [ -z "$$p" ] || \
	  { echo "dist: needs the git checkout whose top this is" >&2; exit 1; }
	@mkdir -p $(BUILD)/dist $(DIST_DIR)
	@git rev-parse --short=12 HEAD >$(BUILD)/dist/COMMIT
	@git archive --format=tar.gz --prefix=sluice-$(VERSION)/ --add-file=$(BUILD)/dist/COMMIT \
	  -o $(DIST_DIR)/sluice-$(VERSION).tar.gz HEAD
	@[ -z "$$(git status --porcelain --untracked-files=no)" ] || \
	  echo "dist: uncommitted changes are not in the tarball: it holds HEAD" >&2
	@echo "dist: $(DIST_DIR)/sluice-$(VERSION).tar.gz (commit $$(cat $(BUILD)/dist/COMMIT))"

# make dist's tarball proven (tests/integration/0051-release-dist.sh, which
# make test runs among the integration tests; it needs no broker).
dist-check: sluice ## the tarball built in a fresh folder with no git (test 0051)
	@bash tests/integration/0051-release-dist.sh

# api/openapi.yaml checked (tests/api/check_openapi.py; test 0508 in make
# test): valid OpenAPI, operationIds, the one Error schema, 405 with Allow.
API_VENV    := build/api-venv
.PHONY: api-tools api-check

api-tools: $(API_VENV)/ok ## the API check's venv (build/api-venv)

api-check: $(API_VENV)/ok ## validate api/openapi.yaml (OpenAPI, operationIds, errors, 405)
	@$(API_VENV)/bin/python tests/api/check_openapi.py api/openapi.yaml

clean: ## remove the build outputs
	rm -rf build build-asan sluice sluice-asan

include tests/fuzz/fuzz.mk

-include $(OBJS:.o=.d)
# The headers and .inc files each test, benchmark and tool was built from.
-include $(wildcard $(BUILD)/tests/*.d $(BUILD)/bench/*.d $(BUILD)/tools/*.d)
