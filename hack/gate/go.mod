module punctual.dev/hack/gate

go 1.25.0
