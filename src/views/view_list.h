/* Every view of the registry (include/storylm/registry.h), one line each:
 * VIEW(name) for the entry `const View view_name` of src/views/view_name.c.
 * A new view is its file and its line here. */
VIEW(ablate)
VIEW(attend)
VIEW(distances)
VIEW(eval)
VIEW(heads)
VIEW(pieces)
VIEW(swap)
VIEW(trace)
