/* Every view of the registry (include/storylm/registry.h), one line each:
 * VIEW(name) for the entry `const View view_name` of src/views/view_name.c.
 * A new view is its file and its line here. */
VIEW(ablate)
VIEW(attend)
VIEW(attribute)
VIEW(cache)
VIEW(circuits)
VIEW(detect)
VIEW(distances)
VIEW(eval)
VIEW(heads)
VIEW(icl)
VIEW(info)
VIEW(patch)
VIEW(pieces)
VIEW(stats)
VIEW(swap)
VIEW(trace)
