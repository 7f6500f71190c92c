module punctual.dev/hack/image/node

go 1.25.0
