module github.com/multiworld/multiworld/bindings/go/mwprom

go 1.19

require (
	github.com/multiworld/multiworld/bindings/go v0.0.0
	github.com/prometheus/client_golang v1.14.0
)

replace github.com/multiworld/multiworld/bindings/go => ../
