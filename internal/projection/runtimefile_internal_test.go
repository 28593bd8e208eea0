package projection

import (
	"reflect"
	"runtime"
)

// runtimeFile is the source file of a method value's function.
func runtimeFile(f reflect.Value) string {
	fn := runtime.FuncForPC(f.Pointer())
	if fn == nil {
		return ""
	}
	file, _ := fn.FileLine(fn.Entry())
	return file
}
