# Everything starts from nothing: `make certify` and `make test` each build .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TORCH  := torch==2.13.0
JOBS   ?= 2

.PHONY: certify test test-slow bench venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet $(TORCH)
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

## Certify the reference implementation with the kit (the main job).
certify: $(STAMP)
	$(BIN)/codemode certify --role compiler --cmd '$(BIN)/codemode compile' --report certify-report.json --junit certify-junit.xml

## The kit's own tests (slow fuzzing excluded).
test: $(STAMP)
	$(BIN)/pytest -n $(JOBS) -m 'not slow'

test-slow: $(STAMP)
	$(BIN)/pytest -n $(JOBS) -m slow

bench: $(STAMP)
	$(BIN)/codemode bench js

clean:
	rm -rf $(VENV) certify-report.json certify-junit.xml .hypothesis .pytest_cache
