package main

// notes say why where the table's yes or refused is not the whole story,
// by "Kind" (a kind Plumb lacks) or "Kind.part.field".
var notes = map[string]string{}
