#!/usr/bin/env bash
# Dev call J (session 9): where version 13's split cost goes. (1) v13 unsplit against its parent
# on shapes the rule leaves unsplit (codegen), (2) kernel vs memset time of the split (traces),
# (3) per-tile timers of the short causal D128 shape and D128 S2k full, (4) the short causal cases.
set -u
FINAL=$OUT
OUT=$(mktemp -d)
trap 'tar -czf "$FINAL/run.tgz" -C "$OUT" .' EXIT
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
export LD_LIBRARY_PATH=$PWD/gpu-carry/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cudnn_lib=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))" 2>/dev/null)
[ -n "$cudnn_lib" ] && export LD_LIBRARY_PATH=$cudnn_lib:$LD_LIBRARY_PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
bench() {  # b h s d causal impls [extra]
  local c=--no-causal; [ "$5" = 1 ] && c=--causal
  echo "== b$1 h$2 s$3 d$4 causal$5 ${7:-}"
  timeout 120 gpu-carry/attnprof bench --impl "$6" --interleave --device cuda -b $1 --heads $2 --kv-heads $2 -s $3 --kv-seq $3 \
    -d $4 --dtype bf16 --layout bhsd $c --timing cold ${7:-} 2>&1 | grep -E "^(fused|cudnn)|rror"
}
el "1. v13 unsplit vs parent"
{
bench 8 16 2048 128 0 fused:hopper_v8,fused:hopper_v13,cudnn
bench 2 16 4096 128 0 fused:hopper_v8,fused:hopper_v13,cudnn
bench 33 4 8192 128 0 fused:hopper_v11,fused:hopper_v13,cudnn
bench 8 16 2048 128 0 fused:hopper_v8,fused:hopper_v13,cudnn
bench 33 4 8192 128 0 fused:hopper_v11,fused:hopper_v13,cudnn
} > $OUT/codegen.txt 2>&1; cat $OUT/codegen.txt
el "2. split: traces"
bench 4 16 4096 128 0 fused:hopper_v8,fused:hopper_v13,cudnn "--trace $OUT/tr4k --repeats 30" > $OUT/split.txt 2>&1
bench 1 16 16384 128 0 fused:hopper_v11,fused:hopper_v13,cudnn "--trace $OUT/tr16k --repeats 20" >> $OUT/split.txt 2>&1
cat $OUT/split.txt; ls $OUT/tr4k | head
el "3. timers"
timeout 120 gpu-carry/attnprof_fused_lab --timers --shape 128,32,32,256,256,128,1 --shape 32,32,32,512,512,64,1 --shape 8,16,16,2048,2048,128,0 --path hopper_v8 > $OUT/timers.txt 2>&1; echo "timers rc=$?"
cat $OUT/timers.txt
el "4. short causal"
{
bench 128 32 256 128 1 fused:hopper,fused:hopper_v6,fused:hopper_v8,fused:hopper_v11,cudnn
bench 32 32 512 64 1 fused:hopper,fused:hopper_v6,fused:hopper_v8,fused:hopper_v11,cudnn
} > $OUT/short.txt 2>&1; cat $OUT/short.txt
el "end"
