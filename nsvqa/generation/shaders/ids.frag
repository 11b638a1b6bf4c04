
#version 330
uniform int u_object_id;
uniform int u_part_id;
layout(location = 0) out int out_object;
layout(location = 1) out int out_part;
void main() { out_object = u_object_id; out_part = u_part_id; }
