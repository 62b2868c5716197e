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

# The main job: the Hermitcrab web shell on http://127.0.0.1:8420 (open the
# URL it prints; the page asks for your Anthropic key once).
run: build
	bin/hermitcrab serve

clean:
	rm -rf bin $(REACT_JS)
