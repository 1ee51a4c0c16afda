# The whole test suite: installs the real MCP servers and clients the tests
# drive (pinned in testdata/npm/package-lock.json), then runs every Go test.
.PHONY: test
test: npm
	go vet ./...
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
		echo "NOTE: Chromium is not installed: the browser test of the inspector (internal/ui) is skipped (apt-get install chromium)."
	go test ./...

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
