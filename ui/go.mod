module plumb.dev/ui

go 1.26.0

replace (
	plumb.dev/api => ../api
	plumb.dev/pkg => ../pkg
)
