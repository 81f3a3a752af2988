set terminal pngcairo size 960,640 noenhanced font 'DejaVu Sans,11'
set grid
set key below height 1.5
set datafile commentschars "#"
set style data linespoints
set logscale xy
set format y "%.0e"
set xlabel "N: nodes"
set key top left reverse Left
set xtics (16,64,256,1024,4096)

set output 'model-conn.png'
set title "model: connections or QPs per node, P = 128 processes per node (full mesh; RC and tcp coincide)"
set ylabel "connections / QPs per node"
plot 'model.dat' index 2 using 1:2 title "RC" lw 2, 'model.dat' index 5 using 1:2 title "DC" lw 2, 'model.dat' index 8 using 1:2 title "XRC" lw 2, 'model.dat' index 11 using 1:2 title "UD" lw 2, 'model.dat' index 14 using 1:2 title "tcp" lw 2, 'model.dat' index 17 using 1:2 title "srm" lw 2

set output 'model-mem.png'
set title "model: transport memory per node, P = 128 processes per node (full mesh)"
set ylabel "bytes per node"
plot 'model.dat' index 2 using 1:3 title "RC" lw 2, 'model.dat' index 5 using 1:3 title "DC" lw 2, 'model.dat' index 8 using 1:3 title "XRC" lw 2, 'model.dat' index 11 using 1:3 title "UD" lw 2, 'model.dat' index 14 using 1:3 title "tcp" lw 2, 'model.dat' index 17 using 1:3 title "srm" lw 2

unset output
