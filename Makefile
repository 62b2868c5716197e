# The two set-up commands: `make run` (the main job) and `make test`.
GO ?= go
BINARIES := hermitcrab lumen solve

.PHONY: build test bench run vet fmt-check clean

build:
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

# Until `hermitcrab serve` exists this says what it will start.
run: build
	@echo "make run will start the Hermitcrab web server (bin/hermitcrab serve, http://127.0.0.1:8420)."
	@echo "That server is not built yet. What works now: bin/hermitcrab ping (checks your provider set-up)."
	@echo "Try it offline: bin/hermitcrab ping --provider script --script docs/examples/ping.json"
	@bin/hermitcrab ping --provider script --script docs/examples/ping.json

clean:
	rm -rf bin
