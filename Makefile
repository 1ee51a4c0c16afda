# The whole test suite: installs the real MCP servers and clients the tests
# drive (pinned in testdata/npm/package-lock.json), then runs every Go test.
.PHONY: test
test:
	npm ci --prefix testdata/npm --no-audit --no-fund --loglevel=error
	go vet ./...
	go test ./...

# Benchmarks; figures and method in docs/BENCHMARKS.md.
.PHONY: bench
bench:
	npm ci --prefix testdata/npm --no-audit --no-fund --loglevel=error
	go test -run '^$$' -bench . -benchtime 2s -count 5 ./... | tee bench.txt
