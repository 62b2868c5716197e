# The two set-up commands: `make run` (the main job) and `make test`.
GO ?= go
BINARIES := hermitcrab lumen solve

.PHONY: build test bench run vet fmt-check clean

REACT_JS := hermitcrab/web/assets/react.js

# npm ci only when node_modules is missing or older than the lock
# (npm ci writes node_modules/.package-lock.json).
node_modules/.package-lock.json: package-lock.json package.json
	npm ci
	@touch $@

# The React bundle the web shell embeds, built with esbuild's Go API.
$(REACT_JS): node_modules/.package-lock.json hermitcrab/web/assets/gen.go
	$(GO) run hermitcrab/web/assets/gen.go

build: $(REACT_JS)
	@mkdir -p bin
	$(GO) build -o bin/ $(addprefix ./cmd/,$(BINARIES))

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

test: build vet fmt-check
	$(GO) test -race -count=1 ./...

# Benchmarks print ns/op and allocations per package; targets are in docs/.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Until `hermitcrab serve` exists this boots an instance offline from a script.
run: build
	@echo "make run will start the Hermitcrab web server (bin/hermitcrab serve); it is not built yet."
	@echo "Meanwhile: a headless boot in a fresh data directory, with scripted LLM responses."
	@bin/hermitcrab --data "$$(mktemp -d)" boot --print --provider script --script cmd/hermitcrab/testdata/boot.json
	@echo "With your key: ANTHROPIC_API_KEY=... bin/hermitcrab boot --print, then bin/hermitcrab chat"

clean:
	rm -rf bin $(REACT_JS)
