module github.com/multiworld/multiworld/bindings/go

go 1.19
