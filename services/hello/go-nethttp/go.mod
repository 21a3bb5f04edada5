module svcbench/services/hello/go-nethttp

go 1.22
