module punctual.dev/hack/images

go 1.25.0
