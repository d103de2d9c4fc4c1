# gsched: the two commands that matter are `make cluster` and `make test`.
CARGO ?= cargo

.PHONY: all build release install test cluster cluster-down cluster-status bench lint fmt

all: build

# gsstepd and gsbatch, started once per job, are also built static (scripts/build-static.sh).
build:
	$(CARGO) build --workspace --bins
	scripts/build-static.sh >/dev/null

release:
	$(CARGO) build --release --bins
	scripts/build-static.sh --release >/dev/null

# Binaries under $(PREFIX) (default /usr/local); `make install SLURM_NAMES=1` also installs
# sbatch, squeue, scancel, sinfo, scontrol, sacct, sacctmgr and sprio pointing at the gs* commands.
PREFIX ?= /usr/local
install:
	scripts/install.sh --prefix $(PREFIX) $(if $(SLURM_NAMES),--slurm-names)

# `cargo test` does not build other packages' binaries, and the integration tests run the
# real daemons and commands: build them first.
# The tests run the static gsstepd and gsbatch, as installed ones do.
test:
	$(CARGO) build --workspace --bins
	scripts/build-static.sh >/dev/null
	$(CARGO) test --workspace

# A local cluster (controller + two node daemons on loopback) running a first job.
cluster:
	scripts/local-cluster.sh up

cluster-down:
	scripts/local-cluster.sh down

cluster-status:
	scripts/local-cluster.sh status

# Submission rate and latency against the local cluster (`make bench ARGS=--with-slurm`).
bench:
	bench/submit.sh $(ARGS)

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all
