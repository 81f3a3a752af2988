# experiment 1 (hosts)
/work/main/contrib/bench/hosts.sh --build /work/main/build --reps 3 --out /tmp/eval-full/hosts.md

# experiment 2 and 3 (mesh)
/work/main/contrib/bench/mesh.sh --build /work/main/build --reps 3 --out /tmp/eval-full/mesh.md

# experiment 4 (resources)
/work/main/contrib/bench/resources.sh --build /work/main/build --reps 3 --out /tmp/eval-full/resources.md

# experiment 5 (flows)
/work/main/contrib/bench/flows.sh --build /work/main/build --reps 3 --out /tmp/eval-full/flows.md

# experiment 6 (model)
/work/main/contrib/bench/model.sh --out /tmp/eval-full/model.md --costs /tmp/eval-full/resources-costs.txt

