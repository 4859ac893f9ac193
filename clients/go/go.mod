module linkcond

go 1.19
