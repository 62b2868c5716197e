# The two set-up commands: `make run` (the main job) and `make test`.
GO ?= go
BINARIES := hermitcrab lumen solve

.PHONY: build test bench run vet fmt-check react react-check clean

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

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

test: build vet fmt-check react-check
	$(GO) test -race -count=1 ./...

# Benchmarks print ns/op and allocations per package; targets are in docs/.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The main job: the Hermitcrab web shell on http://127.0.0.1:8420 (open the
# URL it prints; the page asks for your Anthropic key once).
run: build
	bin/hermitcrab serve

clean:
	rm -rf bin
