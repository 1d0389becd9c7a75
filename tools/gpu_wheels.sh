#!/usr/bin/env bash
# Prepare, here, what the GPU check (tools/gpu_check.py) carries to a device machine that has no network:
#   .gpu/site.tgz    the Python packages its image lacks, installed for its Python 3.12 on manylinux x86_64, pruned
#                    (Unsloth's Studio web app and the bitsandbytes libraries of other CUDA versions are left out) and
#                    compressed: about 17 MB, where the wheels are 81 MB and a call carries at most 64 MiB;
#   .gpu/tiny-model  the tiny model (copied from $BILATERAL_TEST_TINY_MODEL, or built).
# Then it prints the one device command line. .gpu/ is git-ignored; a `run` names it in `carry`.
#
# The device image (the library's device KINDS.md, read 2026-11) has python3 3.12.3 with torch 2.11.0+cu130,
# transformers 5.17.0, triton 3.6.0, accelerate 1.15.0, torchvision 0.26.0, tokenizers, huggingface_hub, pyarrow,
# pandas, xxhash, peft (version unread: carried at our pin); it has no unsloth, trl, datasets, bitsandbytes, xformers.
# Usage: bash tools/gpu_wheels.sh   (or make gpu-wheels; DRY=1: fetch the wheels to a
#        throwaway folder and list their sizes; DRY=2: print the package list only)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
DEST=${DEST:-.gpu}
DEV_PY=${DEV_PY:-3.12}
BNB_CUDA=${BNB_CUDA:-130}     # torch.version.cuda there is 13.0: bitsandbytes loads libbitsandbytes_cuda130.so
PLAT="--only-binary=:all: --implementation cp --python-version $DEV_PY --platform manylinux_2_28_x86_64
      --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64
      --platform manylinux2014_x86_64 --platform manylinux1_x86_64"

pin() {  # the version constraints-gpu.txt pins for a package, or the fallback given
    local v
    v=$(grep -iE "^$1==" constraints-gpu.txt | head -1 | cut -d= -f3 || true)
    echo "$1==${v:-$2}"
}
# What `import unsloth`, trl's SFT and GRPO trainers, datasets and bilateral.sft import that the image lacks (found by
# importing them in a CPU .venv-gpu with UNSLOTH_ALLOW_CPU=1 and comparing with the image's package list), at the
# versions that environment resolved. No other dependency is fetched (--no-deps). xformers 0.0.35's compiled operators
# were built for torch 2.10; with the image's torch 2.11 Unsloth says so and uses PyTorch attention (seen on CPU).
PKGS=(
    "$(pin unsloth)" "$(pin unsloth_zoo)" "$(pin trl)" "$(pin datasets)" "$(pin peft)" "$(pin bitsandbytes)"
    "$(pin xformers)" "$(pin torchao)" "$(pin cut_cross_entropy)" "fsspec==2026.2.0" "dill==0.4.1"
    "multiprocess==0.70.19" "fastcore==2.2.41" "pydantic==2.14.4" "pydantic_core==2.50.5" "typing_inspection==0.4.5"
    "annotated_types==0.8.0" "typing_extensions==4.16.0"
)
echo "packages for the device (cp${DEV_PY/./}, manylinux x86_64): ${PKGS[*]}" >&2
[ "${DRY:-0}" = 2 ] && exit 0    # the list alone

if [ "${DRY:-0}" = 1 ]; then
    # Resolution and sizes only: pip downloads to a throwaway folder, nothing under $DEST.
    tmp=$(mktemp -d)
    $PY -m pip download --no-deps $PLAT -d "$tmp" "${PKGS[@]}" 2>&1 | grep -E '^(Saved|ERROR)' >&2 || true
    du -ch "$tmp"/*.whl | sort -h >&2
    rm -rf "$tmp"
    exit 0
fi

rm -rf "$DEST/site" "$DEST/site.tgz" "$DEST/wheels"
mkdir -p "$DEST/wheels"
$PY -m pip download -q --no-deps $PLAT -d "$DEST/wheels" "${PKGS[@]}"
$PY -m pip install -q --no-deps --no-compile $PLAT --target "$DEST/site" "$DEST"/wheels/*.whl
rm -rf "$DEST/wheels" "$DEST/site/studio" "$DEST/site/bin"
find "$DEST/site/bitsandbytes" -name 'libbitsandbytes_*.so' ! -name "libbitsandbytes_cuda${BNB_CUDA}.so" -delete
find "$DEST/site" -name __pycache__ -type d -prune -exec rm -rf {} +
tar czf "$DEST/site.tgz" -C "$DEST" site
rm -rf "$DEST/site"

# The tiny model, with the project's own environment (INPUTS=0 skips it). The SFT data is made there, by the check's
# first phase, so that the datasets version that reads it also wrote it.
if [ "${INPUTS:-1}" = 1 ]; then
    PYTHONPATH=$PWD $PY tools/gpu_check.py --prepare --no-data --inputs "$DEST" >&2
fi
du -sh "$DEST"/* >&2
total=$(du -sm "$DEST" | cut -f1)
echo "$DEST holds ${total} MiB (a run carries at most 64 MiB with the working tree)" >&2
[ "$total" -lt 60 ] || { echo "too big to carry" >&2; exit 1; }

# The device check: run(command=..., carry=[".gpu"], timeout_s=340): a machine start (minutes) plus
# at most 340 s leaves room to run it once more inside the 15 minutes of device time a session gets.
cat <<'EOF'
mkdir -p /tmp/gpu && tar xzf .gpu/site.tgz -C /tmp/gpu || exit; export PYTHONPATH=/tmp/gpu/site HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1; nvidia-smi -L; python3 tools/gpu_check.py --inputs .gpu --out "$OUT" --budget 280 --vllm
EOF
