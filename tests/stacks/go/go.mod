module tokentrace.test/stacks/go

go 1.19
