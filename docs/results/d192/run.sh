#!/bin/sh
# The measurements of the larger pretrained model in the README (run from the
# repository root after building vitune).
set -e
M=models/fmnist_c0-4_vit_d192.safetensors
R=docs/results/d192
TASK='fashion-mnist:train?classes=5-9&per_class=200&part=0:160&seed=0'
TEST='fashion-mnist:test?classes=5-9'
PRE='fashion-mnist:train?classes=0-4'
V=build/cli/vitune
mkdir -p $R runs/d192
$V eval --model $M --data 'fashion-mnist:test?classes=0-4' --overwrite --results $R/eval_pretraining.json
$V probe --model $M --data "$TASK" --eval-data "$TEST" --overwrite --results $R/probe.json
$V plasticity --model $M --data "$TASK" --reference-data "$PRE" --images 800 --overwrite --out $R/plasticity_reference.json --csv $R/plasticity_reference.csv
$V plasticity --protocol paper --model $M --data "$TASK" --images 800 --overwrite --out $R/plasticity_paper.json --csv $R/plasticity_paper.csv
$V anchor --model $M --data "$PRE" --images 2000 --overwrite --out runs/d192/anchor.safetensors
$V select --method gdfps --model $M --anchor runs/d192/anchor.safetensors --data "$TASK" --k 8 --overwrite --out runs/d192/gdfps.safetensors --results $R/select_gdfps.json
FT="finetune --model $M --data $TASK --eval-data $TEST --batch-size 50 --steps 160 --optimizer adamw --weight-decay 0 --warmup-steps 16 --clip-norm 1 --seed 0 --overwrite"
$V $FT --lr 3e-4 --train all --out runs/d192/full.safetensors --results $R/full.json &
$V $FT --lr 1e-2 --mask runs/d192/gdfps.safetensors --out runs/d192/gdfps_ft.safetensors --results $R/gdfps_1e-2.json --no-lock &
wait
