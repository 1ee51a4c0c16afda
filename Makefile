# The whole test suite: installs the real MCP servers and clients the tests
# drive (pinned in testdata/npm/package-lock.json), then runs every Go test.
.PHONY: test
test: npm
	go vet ./...
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
		echo "NOTE: Chromium is not installed: the browser test of the inspector (internal/ui) is skipped (apt-get install chromium)."
	go test ./...

# Coverage of the whole suite, the codemode processes of the end-to-end tests
# included: unit tests write counters with -test.gocoverdir, the e2e tests
# build codemode with -cover and run it with GOCOVERDIR (CODEMODE_TEST_COVERDIR
# tells them where); `go tool covdata` merges both. Per package, every
# package's tests counted (-coverpkg=./...). Figures: README, Development.
COVERDIR := $(CURDIR)/.cover
.PHONY: cover
cover: npm
	rm -rf $(COVERDIR) && mkdir -p $(COVERDIR)
	CODEMODE_TEST_COVERDIR=$(COVERDIR) go test -cover -coverpkg=./... ./... -args -test.gocoverdir=$(COVERDIR)
	go tool covdata percent -i=$(COVERDIR)
	go tool covdata textfmt -i=$(COVERDIR) -o coverage.out
	go tool cover -func=coverage.out | tail -1

.PHONY: npm
npm:
	npm ci --prefix testdata/npm --no-audit --no-fund --loglevel=error

# Benchmarks: every `go test -bench` of the module, 6 rounds, summarised by
# benchstat (medians with confidence intervals), with the GC setting the
# codemode binary uses (GOGC=400, see cmd/codemode). Method and latest
# figures: docs/BENCHMARKS.md.
.PHONY: bench
bench: npm
	GOGC=400 go test -run '^$$' -bench . -benchtime 1s -count 6 ./... | tee bench.txt
	go tool benchstat bench.txt
