/* Every view of the registry (include/storylm/registry.h), one line each:
 * VIEW(name) for the entry `const View view_name` of src/views/view_name.c.
 * A new view is its file and its line here. */
VIEW(distances)
VIEW(stats)
VIEW(circuits)
VIEW(patch)
VIEW(attribute)
VIEW(detect)
VIEW(icl)
VIEW(cache)
VIEW(info)
