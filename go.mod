module github.com/pacer-dev/pacer

go 1.26
