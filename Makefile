# The two set-up commands: `make run` (the main job) and `make test`.
GO ?= go
BINARIES := hermitcrab lumen solve

.PHONY: build test bench run vet fmt-check react react-check tools errcheck cross mod-check clean

# npm ci only when node_modules is missing or older than the lock
# (npm ci writes node_modules/.package-lock.json).
node_modules/.package-lock.json: package-lock.json package.json
	npm ci
	@touch $@

# The React bundle the web shell embeds (hermitcrab/web/assets/react.js) is
# committed, so `go build` and `go install` give a working hermitcrab without
# Node.js. `make react` rebuilds it from package-lock.json with esbuild's Go
# API (commit the result); `make react-check` fails when the committed file
# is not what a fresh build gives.
react: node_modules/.package-lock.json
	$(GO) run hermitcrab/web/assets/gen.go

react-check: node_modules/.package-lock.json
	$(GO) run hermitcrab/web/assets/gen.go -check

build:
	@mkdir -p bin
	$(GO) build -o bin/ $(addprefix ./cmd/,$(BINARIES))

vet:
	$(GO) vet ./...

# The unchecked-error check: errcheck, pinned, installed from the module
# proxy into bin/tools on first use (.ci/run installs it up front with
# make tools). Tests are not checked. Calls whose errors need no check are
# listed, each with its reason, in .ci/errcheck-excludes; anything else is
# checked, or assigned to _ with a comment saying why ignoring it is right.
ERRCHECK_VERSION := v1.30.0
ERRCHECK := bin/tools/errcheck-$(ERRCHECK_VERSION)

$(ERRCHECK):
	@mkdir -p bin/tools/tmp
	GOBIN=$(CURDIR)/bin/tools/tmp $(GO) install github.com/kisielk/errcheck@$(ERRCHECK_VERSION)
	mv bin/tools/tmp/errcheck $@
	@rmdir bin/tools/tmp

tools: $(ERRCHECK)

errcheck: $(ERRCHECK)
	@echo "errcheck $(ERRCHECK_VERSION) -ignoretests -exclude .ci/errcheck-excludes ./..."
	@$(ERRCHECK) -ignoretests -exclude .ci/errcheck-excludes ./...
	@echo "errcheck: no unchecked errors"

# Every command builds for the release platforms (CI runs this). Pure Go:
# cgo off, as release builds have it. Failures are listed together.
PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
cross:
	@failed=; for p in $(PLATFORMS); do \
		echo "cross: GOOS=$${p%/*} GOARCH=$${p#*/} go build ./..."; \
		CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -o /dev/null ./... || failed="$$failed $$p"; \
	done; \
	if [ -n "$$failed" ]; then echo "cross: build failed for:$$failed"; exit 1; fi; \
	echo "cross: every command builds for $(PLATFORMS)"

# go.mod and go.sum are what go mod tidy makes of the imports (CI runs it;
# it asks the module proxy about test dependencies of dependencies).
mod-check:
	$(GO) mod tidy -diff

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# -timeout: a guard against a hung test, not a speed target. Under -race on
# a busy 2-core machine the largest packages (solve, lumen) take close to
# go test's default 10 minutes; 30 keeps a slow machine from failing them.
test: build vet fmt-check errcheck react-check
	$(GO) test -race -count=1 -timeout 30m ./...

# Benchmarks print ns/op and allocations per package; targets are in docs/.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The main job: the Hermitcrab web shell on http://127.0.0.1:8420 (open the
# URL it prints; the page asks for your Anthropic key once).
run: build
	bin/hermitcrab serve

clean:
	rm -rf bin
