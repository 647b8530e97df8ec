module go.bytecodealliance.org/pkg

go 1.25
